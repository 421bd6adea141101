"""Run the web server with a Celery worker and beat beside it: the embedded default of `make run`.

With the default broker (the filesystem transport under var/broker, project/broker.py) nothing
else has to run; with CELERY_BROKER_URL pointing at Redis the same command works too.

serve supervises its two children and never leaves them behind:
- a child that exits, however (a crash, a SIGKILL by hand), is logged and started again, after
  1 s, then 2, 4, ... up to 30 s while it keeps dying within a minute of its start;
- each child runs in its own process group; when serve stops (SIGTERM, SIGINT, SIGHUP) it asks
  each child for a warm shutdown, then kills what is left of the group, and it kills the group
  of a child that exited (its pool's processes) before starting it again;
- a child stops by itself when serve is gone, even by SIGKILL (a watchdog thread on its parent
  pid, project/celery.py);
- one serve per data directory: a second one refuses (an flock on var/serve.lock, which the
  children inherit, so it also waits for the last child of a killed serve to exit);
- a port already in use is one line and an exit before any child starts.
`/readyz` checks the worker's heartbeat (WORKER_HEARTBEAT_MAX_AGE, 60 s unless set).
"""

import fcntl
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from project.celery import SERVE_PID_VARIABLE, ensure_broker_folders

logger = logging.getLogger("contextstore.serve")

HEARTBEAT_MAX_AGE = 60  # /readyz's limit under serve unless WORKER_HEARTBEAT_MAX_AGE is set
BACKOFF_MAX = 30.0  # seconds between restarts of a child that keeps dying
STEADY_AFTER = 60.0  # a child that ran this long starts its next backoff again from 1 s
STOP_TIMEOUT = 20.0  # seconds a child gets for a warm shutdown before SIGKILL


@dataclass
class Child:
    """One supervised process: its command, the running one, and its restart history."""

    name: str
    argv: list[str]
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    restarts: int = 0
    failures: int = 0  # exits in a row, each within STEADY_AFTER of its start
    due_at: float | None = None  # when a restart is due, while waiting out the backoff

    def kill_group(self, sig: signal.Signals) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass  # the group is empty already


@dataclass
class Supervisor:
    """Starts the children and restarts one that exits, from one thread that lives as long as
    serve (so what it starts is always its own)."""

    children: list[Child]
    env: dict[str, str]
    keep_fds: tuple[int, ...]
    stopping: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        for child in self.children:
            self._spawn(child)
        threading.Thread(target=self._watch, name="serve-supervisor", daemon=True).start()

    def _spawn(self, child: Child) -> None:
        child.proc = subprocess.Popen(child.argv, env=self.env, pass_fds=self.keep_fds,
                                      start_new_session=True)
        child.started_at = time.monotonic()
        child.due_at = None
        logger.info("%s started (pid %s)", child.name, child.proc.pid)

    def _watch(self) -> None:
        while not self.stopping.wait(0.5):
            with self.lock:
                if self.stopping.is_set():
                    return
                for child in self.children:
                    try:
                        self._check(child)
                    except Exception:  # a failed start is tried again at the next backoff
                        logger.exception("could not start %s again", child.name)
                        child.due_at = time.monotonic() + BACKOFF_MAX

    def _check(self, child: Child) -> None:
        now = time.monotonic()
        if child.due_at is not None:
            if now >= child.due_at:
                child.restarts += 1
                self._spawn(child)
            return
        assert child.proc is not None
        status = child.proc.poll()
        if status is None:
            return
        child.kill_group(signal.SIGKILL)  # what it leaves (beat's process, the pool) goes too
        ran = now - child.started_at
        child.failures = 1 if ran >= STEADY_AFTER else child.failures + 1
        delay = min(2.0 ** (child.failures - 1), BACKOFF_MAX)
        how = f"signal {-status}" if status < 0 else f"status {status}"
        logger.error("%s (pid %s) exited with %s after %.0f s; starting it again in %.0f s "
                     "(restart %d)", child.name, child.proc.pid, how, ran, delay, child.restarts + 1)
        child.due_at = now + delay

    def stop(self) -> None:
        with self.lock:
            self.stopping.set()
            running = [c for c in self.children if c.proc is not None and c.proc.poll() is None]
            for child in running:
                assert child.proc is not None
                # Celery's warm shutdown: to the main process only, which stops its own pool
                # (a pool process sent SIGTERM directly dies mid-task and is replaced).
                child.proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + STOP_TIMEOUT
            for child in running:
                assert child.proc is not None
                try:
                    child.proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
                except subprocess.TimeoutExpired:
                    logger.warning("%s did not stop within %.0f s: killed", child.name, STOP_TIMEOUT)
            for child in self.children:
                child.kill_group(signal.SIGKILL)
                if child.proc is not None and child.proc.poll() is None:
                    child.proc.wait(timeout=10)


def take_data_lock(var_dir: Path) -> int:
    """Hold var/serve.lock for this process (and the children it passes the descriptor to)."""
    path = var_dir / "serve.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise CommandError(
            f"another `manage.py serve` is running on {var_dir} (pid {holder}, or its worker or "
            f"beat still stopping): stop it first, or give this one its own CONTEXTSTORE_VAR_DIR"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def check_port_free(host: str, port: int) -> None:
    """Bind the address as runserver will (SO_REUSEADDR), then let it go: runserver itself ends
    the process with os._exit on a taken port, past every cleanup."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise CommandError(f"cannot serve on {host}: {exc.strerror}") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise CommandError(f"port {port} on {host} is not free ({exc.strerror}): choose another, "
                               f"e.g. `make run PORT={port + 1}` or `serve --port {port + 1}`") from None


def _stop_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)  # unwinds runserver; handle()'s finally stops the children


class Command(BaseCommand):
    help = "Serve contextstore with a supervised Celery worker and beat beside the web server."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-worker", action="store_true", help="serve the web app only")

    def handle(self, *args: object, host: str, port: int, no_worker: bool, **options: object) -> None:
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        lock_fd = take_data_lock(settings.VAR_DIR)
        check_port_free(host, port)
        supervisor = None
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _stop_on_signal)
        try:
            if not no_worker:
                supervisor = self.start_children(lock_fd)
            call_command("runserver", f"{host}:{port}", use_reloader=False)
        finally:
            for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(signum, signal.SIG_IGN)  # a second Ctrl-C must not cut the stop short
            if supervisor is not None:
                supervisor.stop()
            os.close(lock_fd)

    def start_children(self, lock_fd: int) -> Supervisor:
        ensure_broker_folders()
        if "WORKER_HEARTBEAT_MAX_AGE" not in os.environ:
            settings.WORKER_HEARTBEAT_MAX_AGE = HEARTBEAT_MAX_AGE  # this process's /readyz
        # Quiet by default: at INFO, beat and the worker log every periodic task (the search
        # index's every 5 s) three times. LOG_LEVEL chooses otherwise.
        level = os.environ.get("LOG_LEVEL") or "WARNING"
        env = {**os.environ, SERVE_PID_VARIABLE: str(os.getpid()), "LOG_LEVEL": level}
        celery = [sys.executable, "-m", "celery", "-A", "project"]
        supervisor = Supervisor(children=[
            Child("worker", [*celery, "worker", "--loglevel", level, "--concurrency", "1",
                             "--without-gossip", "--without-mingle", "--without-heartbeat"]),
            Child("beat", [*celery, "--quiet", "beat", "--loglevel", level,
                           "--schedule", str(settings.VAR_DIR / "celerybeat-schedule")]),
        ], env=env, keep_fds=(lock_fd,))
        supervisor.start()
        self.stdout.write(f"worker and beat started (broker {settings.CELERY_BROKER_URL.split('@')[-1]}, "
                          f"log level {level})")
        return supervisor
