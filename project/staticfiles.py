"""The static source folders as collectstatic sees them, minus node_modules."""

from django.contrib.staticfiles.finders import FileSystemFinder


class SourceFinder(FileSystemFinder):
    """collectstatic skips node_modules folders: an npm install under static/ would otherwise be
    collected into STATIC_ROOT and served to anyone (whitenoise serves what was collected).
    A finder, not an AppConfig subclass: the app stays `django.contrib.staticfiles` by name,
    which is how pytest-django's live server knows to serve static files."""

    def list(self, ignore_patterns):
        return super().list([*(ignore_patterns or []), "node_modules"])
