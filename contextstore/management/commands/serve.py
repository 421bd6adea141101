"""Run the web server and a real Celery worker beside it: the embedded default of `make run`."""

import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve contextstore with a Celery worker beside the web server."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")
        parser.add_argument("--no-worker", action="store_true")

    def handle(self, *args, host: str, port: str, no_worker: bool, **options):
        worker = None
        if not no_worker:
            if settings.CELERY_BROKER_URL.startswith("filesystem://"):
                for key in ("data_folder_in", "processed_folder"):
                    folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get(key)
                    if folder:
                        Path(folder).mkdir(parents=True, exist_ok=True)
            worker = subprocess.Popen([
                sys.executable, "-m", "celery", "-A", "project", "worker", "--beat",
                "--loglevel", "INFO", "--concurrency", "1",
                "--schedule", str(settings.VAR_DIR / "celerybeat-schedule"),
            ])
            self.stdout.write(f"worker started (pid {worker.pid}, broker {settings.CELERY_BROKER_URL})")
        try:
            call_command("runserver", f"{host}:{port}", use_reloader=False)
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(timeout=20)
