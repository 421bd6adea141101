"""Run the web server and a real Celery worker (with beat) beside it: the embedded default of
`make run`.

With the default broker (kombu's filesystem transport under var/broker) nothing else has to
run; with CELERY_BROKER_URL pointing at Redis the same command works too. The worker is a child
process: it stops with the server.
"""

import subprocess
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from project.celery import ensure_broker_folders


class Command(BaseCommand):
    help = "Serve contextstore with a Celery worker (and beat) beside the web server."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")
        parser.add_argument("--no-worker", action="store_true", help="serve the web app only")

    def handle(self, *args: object, host: str, port: str, no_worker: bool, **options: object) -> None:
        worker = None
        if not no_worker:
            ensure_broker_folders()
            settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
            worker = subprocess.Popen([
                sys.executable, "-m", "celery", "-A", "project", "worker", "--beat",
                "--loglevel", "INFO", "--concurrency", "1",
                "--schedule", str(settings.VAR_DIR / "celerybeat-schedule"),
            ])
            self.stdout.write(f"worker started (pid {worker.pid}, broker "
                              f"{settings.CELERY_BROKER_URL.split('@')[-1]})")
        try:
            call_command("runserver", f"{host}:{port}", use_reloader=False)
        finally:
            if worker is not None:
                worker.terminate()
                try:
                    worker.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    worker.kill()
