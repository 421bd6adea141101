"""Django's staticfiles app, with what collectstatic leaves out."""

from django.contrib.staticfiles.apps import StaticFilesConfig


class StaticFiles(StaticFilesConfig):
    """collectstatic skips node_modules folders: an npm install under static/ would otherwise be
    collected into STATIC_ROOT and served to anyone (whitenoise serves what was collected)."""

    ignore_patterns = [*StaticFilesConfig.ignore_patterns, "node_modules"]
