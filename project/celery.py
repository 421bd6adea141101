"""The Celery app, configured from Django settings (the CELERY_* names in project/settings.py)."""

import json
import logging
import os
import signal
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from celery import Celery, bootsteps
from celery.apps.beat import Beat as CeleryBeat
from celery.signals import beat_init, import_modules, worker_init
from kombu.transport import TRANSPORT_ALIASES
from kombu.utils.objects import cached_property

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

# `filesystem://` (the embedded default) is kombu's transport with whole-message writes and
# unreadable messages set aside (project/broker.py); every process that loads the project
# (web, worker, beat) registers it before its first connection.
TRANSPORT_ALIASES["filesystem"] = "project.broker:Transport"


class Beat(CeleryBeat):
    """`celery beat` whose crash is one log record.

    Celery's beat logs what stopped it (CRITICAL, traceback included) and raises it again;
    Python then prints the traceback to stderr, which beat has redirected to a logger, and
    every fragment it writes became a record of its own (~1,200 lines for one crash). Once
    logged, the exception ends the process with status 1 and is not printed again."""

    def start_scheduler(self) -> None:  # type: ignore[override]  # celery's returns None (not as its stub)
        try:
            super().start_scheduler()
        except Exception:
            raise SystemExit(1) from None


class App(Celery):
    """Celery, with `celery beat` running the Beat above."""

    @cached_property
    def Beat(self) -> type[Beat]:
        return self.subclass_with_self(Beat)


logger = logging.getLogger("contextstore.worker")


class Heartbeat(bootsteps.StartStopStep):
    """Writes this worker's heartbeat (contextstore.services.workers) when it starts consuming
    and every WORKER_HEARTBEAT_EVERY seconds after, on the timer of its main loop: a worker
    whose process died or whose loop is stuck stops writing, and /readyz says so."""

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.timer_entry: Any = None

    def start(self, parent: Any) -> None:
        from django.conf import settings

        self.beat(parent)
        self.timer_entry = parent.timer.call_repeatedly(settings.WORKER_HEARTBEAT_EVERY,
                                                        self.beat, (parent,))

    def stop(self, parent: Any) -> None:
        if self.timer_entry is not None:
            self.timer_entry.cancel()
            self.timer_entry = None

    def beat(self, parent: Any) -> None:
        from django.db import connection

        from contextstore.services.workers import worker_heartbeat

        try:
            worker_heartbeat(hostname=parent.hostname, pid=os.getpid())
        except Exception:  # a database outage must not stop the worker; /readyz will tell
            logger.warning("could not write the worker's heartbeat", exc_info=True)
        finally:
            connection.close()  # the main process forks the pool: it keeps no connection open


app = App("contextstore")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.steps["consumer"].add(Heartbeat)

# Set by `manage.py serve` for the worker and beat it starts and supervises.
SERVE_PID_VARIABLE = "CONTEXTSTORE_SERVE_PID"


def _stop_when_serve_is_gone(**kwargs: object) -> None:
    """A worker or beat started by `manage.py serve` stops when serve is gone, however it went
    (SIGKILL included): a watchdog thread sees its parent pid change (within a second) and sends
    its own process SIGTERM, Celery's warm shutdown. A thread rather than Linux's
    PR_SET_PDEATHSIG: it works on every POSIX system (macOS too) and needs no preexec_fn in a
    threaded parent."""
    serve_pid = os.environ.get(SERVE_PID_VARIABLE)
    if not serve_pid:
        return

    def watch() -> None:
        while os.getppid() == int(serve_pid):
            time.sleep(1)
        logger.warning("manage.py serve (pid %s) is gone: stopping", serve_pid)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="serve-watchdog", daemon=True).start()


worker_init.connect(_stop_when_serve_is_gone)
beat_init.connect(_stop_when_serve_is_gone)


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


def _json_say(message: str, logger_name: str = "celery.worker") -> None:
    """One JSON line on stdout in the shape of the JSON log formatter (settings.LOGGING).

    Celery prints its banner and shutdown notices itself rather than through logging (the
    shutdown one from a signal handler, where taking logging's locks could deadlock), so with
    LOG_FORMAT=json they are written here the same unlocked way, as JSON."""
    now = datetime.now()
    stamp = now.strftime("%Y-%m-%d %H:%M:%S") + f",{now.microsecond // 1000:03d}"  # as asctime
    record = {"time": stamp, "level": "INFO",
              "logger": logger_name, "process": os.getpid(), "request_id": "-",
              "message": message.strip()}
    if sys.__stdout__ is None:
        return  # no stdout to write to
    try:
        os.write(sys.__stdout__.fileno(), (json.dumps(record) + "\n").encode())
    except (OSError, ValueError):
        pass  # no stdout to write to


def json_console() -> None:
    """Make the worker's banner and shutdown lines JSON (beat runs with --quiet: no banner)."""
    from celery.apps import worker as worker_app

    def safe_say(msg: str, f: object = None) -> None:
        _json_say(msg)

    def emit_banner(self: worker_app.Worker) -> None:
        hostname = self.hostname  # type: ignore[attr-defined]  # set in WorkController.__init__
        _json_say(f"celery worker {hostname} starting:\n{self.startup_info(artlines=False)}"
                  f"\n{self.extra_info() or ''}")

    # Both replaced on purpose (celery-types leaves safe_say and WorkController.hostname out).
    worker_app.safe_say = safe_say  # type: ignore[attr-defined]
    worker_app.Worker.emit_banner = emit_banner  # type: ignore[method-assign]


def _configure_console() -> None:
    from django.conf import settings

    if settings.LOG_FORMAT == "json":
        json_console()


_configure_console()
