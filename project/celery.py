"""The Celery app, configured from Django settings (the CELERY_* names in project/settings.py)."""

import os
from pathlib import Path

from celery import Celery
from celery.signals import import_modules

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

app = Celery("contextstore")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def ensure_broker_folders() -> None:
    """kombu's filesystem transport (the embedded default) needs its folders to exist."""
    from django.conf import settings

    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        for key in ("data_folder_in", "data_folder_out", "control_folder", "processed_folder"):
            folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get(key)
            if folder:
                Path(folder).mkdir(parents=True, exist_ok=True)


@import_modules.connect
def _on_worker_import(**kwargs: object) -> None:
    ensure_broker_folders()
