"""`manage.py serve` (the embedded default of `make run`) supervises its worker and beat and
never leaves them behind. Real processes: serve on a free port, a data folder of the test's own
(the filesystem broker, the lock) and the test database."""

import fcntl
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from contextstore.models import WorkerHeartbeat
from tests.worker.conftest import _needs_shared_database, database_url, wait_for

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    def __init__(self, var: Path, port: int):
        self.var, self.port, self.url = var, port, f"http://127.0.0.1:{port}"
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("CELERY_BROKER_URL", "WORKER_HEARTBEAT_MAX_AGE", "LOG_LEVEL")}
        self.env.update(DATABASE_URL=database_url(), CONTEXTSTORE_VAR_DIR=str(var), LOG_FORMAT="text",
                        WORKER_HEARTBEAT_EVERY="2")
        self.log_path = var.parent / f"serve-{port}.log"
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        return [sys.executable, "manage.py", "serve", "--port", str(self.port)]

    def start(self) -> "Serve":
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(self.command(), cwd=ROOT, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT)
        return self

    def run_to_end(self) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(), cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=120)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def children(self, name: str) -> list[int]:
        return [int(p) for p in re.findall(rf"{name} started \(pid (\d+)\)", self.log())]

    def ready(self) -> bool:
        try:
            response = httpx.get(f"{self.url}/readyz", timeout=5)
        except httpx.HTTPError:
            return False
        return response.status_code == 200 and response.json()["checks"]["worker"].startswith("ok")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for pid in self.children("worker") + self.children("beat"):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "zombie" not in status


@pytest.fixture
def serve(transactional_db, tmp_path):
    _needs_shared_database()
    started: list[Serve] = []

    def make() -> Serve:
        server = Serve(tmp_path / "var", free_port())
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


def test_serve_restarts_a_killed_worker_refuses_a_second_serve_and_stops_everything_on_sigterm(serve):
    first = serve().start()
    wait_for(first.ready, timeout=180, interval=1, what="/readyz with the worker's heartbeat")
    [worker] = first.children("worker")
    [beat] = first.children("beat")

    second = serve()
    refused = second.run_to_end()
    assert refused.returncode == 1
    assert "another `manage.py serve` is running on" in refused.stderr
    assert "started" not in refused.stdout

    os.kill(worker, signal.SIGKILL)
    wait_for(lambda: len(first.children("worker")) == 2, timeout=30, what="a new worker")
    assert re.search(rf"worker \(pid {worker}\) exited with signal 9 after \d+ s; starting it again "
                     r"in 1 s \(restart 1\)", first.log())
    restarted = first.children("worker")[-1]
    wait_for(lambda: WorkerHeartbeat.objects.filter(pid=restarted).exists(), timeout=180, interval=1,
             what="the new worker's heartbeat")
    assert first.ready()

    first.proc.send_signal(signal.SIGTERM)
    assert first.proc.wait(60) == 0
    wait_for(lambda: not any(alive(p) for p in (restarted, beat)), timeout=30, what="the children to exit")


def test_serve_killed_by_sigkill_takes_its_worker_and_beat_along(serve):
    server = serve().start()
    wait_for(lambda: WorkerHeartbeat.objects.exists(), timeout=180, interval=1, what="the worker")
    children = server.children("worker") + server.children("beat")
    server.proc.kill()
    server.proc.wait(10)
    wait_for(lambda: not any(alive(p) for p in children), timeout=60, what="the children to exit")
    assert "manage.py serve (pid" in server.log() and "is gone: stopping" in server.log()
    with (server.var / "serve.lock").open("a") as lock:  # nothing holds the data folder any more
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_serve_on_a_taken_port_says_so_in_one_line_and_starts_nothing(serve):
    server = serve()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", server.port))
        taken.listen(1)
        result = server.run_to_end()
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"CommandError: port {server.port} on 127.0.0.1 is not free (Address already in use): choose "
        f"another, e.g. `make run PORT={server.port + 1}` or `serve --port {server.port + 1}`"]
    assert "started" not in result.stdout
