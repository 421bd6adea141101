"""A real Celery worker process against the local Redis and the test database.

The worker is a separate process, so it must see committed data: these tests use
`transactional_db` and pass the test database's URL (PostgreSQL, or the SQLite test file) to the
worker. Without a Redis server the Redis tests are skipped. Each run uses its own Redis database
(CONTEXTSTORE_TEST_REDIS_URL, default db 5) and a queue name of its own, removed afterwards.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest
import redis
from django.db import connection
from kombu import Exchange, Queue

from project.celery import app

REDIS_URL = os.environ.get("CONTEXTSTORE_TEST_REDIS_URL", "redis://127.0.0.1:6379/5")
VISIBILITY_TIMEOUT = 3  # seconds before a dead worker's message is delivered again


@dataclass
class Broker:
    url: str
    queue: str
    env: dict[str, str] = field(default_factory=dict)


def _redis_up(url: str) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname, parsed.port or 6379), timeout=1):
            return True
    except OSError:
        return False


def _reset_producers() -> None:
    # The app caches its connection pool and routing from the first send; drop both so the
    # next send reads the updated configuration.
    app._pool = None
    app.__dict__.pop("amqp", None)


def _use_broker(url: str, queue: str, options: dict) -> dict:
    saved = {key: app.conf[key] for key in ("broker_url", "broker_write_url", "task_default_queue",
                                            "broker_transport_options", "task_queues", "task_routes")}
    saved["env"] = os.environ.get("CELERY_BROKER_URL")
    # Celery reads CELERY_BROKER_URL from the environment before its own configuration.
    os.environ["CELERY_BROKER_URL"] = url
    # As settings do for CELERY_QUEUE: derivation on the queue's own ".otlp" sibling.
    queues = [Queue(name, Exchange(name), routing_key=name) for name in (queue, f"{queue}.otlp")]
    app.conf.update(broker_url=url, broker_write_url=url, task_default_queue=queue,
                    broker_transport_options=options, task_queues=queues,
                    task_routes={"contextstore.tasks.derive_otlp": {"queue": f"{queue}.otlp"}})
    _reset_producers()
    return saved


def _restore_broker(saved: dict) -> None:
    env = saved.pop("env")
    if env is None:
        os.environ.pop("CELERY_BROKER_URL", None)
    else:
        os.environ["CELERY_BROKER_URL"] = env
    app.conf.update(saved)
    _reset_producers()


def _needs_shared_database() -> None:
    name = str(connection.settings_dict["NAME"])
    if connection.vendor == "sqlite" and (name == ":memory:" or "mode=memory" in name):
        pytest.skip("an in-memory SQLite test database cannot be shared with a worker process")


@pytest.fixture
def broker(transactional_db) -> Iterator[Broker]:
    _needs_shared_database()
    if not _redis_up(REDIS_URL):
        pytest.skip(f"no Redis at {REDIS_URL}")
    queue = f"contextstore-test-{uuid.uuid4().hex[:8]}"
    saved = _use_broker(REDIS_URL, queue, {"visibility_timeout": VISIBILITY_TIMEOUT})
    yield Broker(REDIS_URL, queue)
    _restore_broker(saved)
    # Only this test's keys: another run (the other database's) may share the Redis database.
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(match=f"*{queue}*"):
        client.delete(key)


@pytest.fixture
def filesystem_broker(transactional_db, tmp_path) -> Iterator[Broker]:
    """The embedded default: kombu's filesystem transport in a folder of this test."""
    _needs_shared_database()
    var = tmp_path / "var"
    folders = {"data_folder_in": str(var / "broker" / "queue"),
               "data_folder_out": str(var / "broker" / "queue"),
               "control_folder": str(var / "broker" / "control"),
               "processed_folder": str(var / "broker" / "processed")}
    for folder in folders.values():
        Path(folder).mkdir(parents=True, exist_ok=True)
    queue = f"contextstore-test-{uuid.uuid4().hex[:8]}"
    saved = _use_broker("filesystem://", queue, folders)
    yield Broker("filesystem://", queue, {"CONTEXTSTORE_VAR_DIR": str(var)})
    _restore_broker(saved)


def database_url() -> str:
    conf = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{conf['NAME']}"
    auth = quote(conf["USER"] or "")
    if conf["PASSWORD"]:
        auth += ":" + quote(conf["PASSWORD"])
    return f"postgres://{auth}@{conf['HOST'] or 'localhost'}:{conf['PORT'] or 5432}/{conf['NAME']}"


class Worker:
    """`celery -A project worker` in its own process group, so a SIGKILL takes all of it."""

    def __init__(self, broker: Broker, log_dir: Path, env: dict[str, str]):
        self.broker = broker
        self.log_dir = log_dir
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        self.log = self.log_dir / f"worker-{self.starts}.log"
        env = {**os.environ, "DATABASE_URL": database_url(), "CELERY_BROKER_URL": self.broker.url,
               "CELERY_QUEUE": self.broker.queue,
               "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT), "CELERY_RESTORE_INTERVAL": "1",
               "LOG_FORMAT": "text", **self.broker.env, **self.env}
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "project", "worker", "-Q",
                 f"{self.broker.queue},{self.broker.queue}.otlp",
                 "--concurrency", "1", "--without-mingle", "--without-gossip", "--loglevel", "INFO",
                 "--hostname", f"{self.broker.queue}-{self.starts}@%h"],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                cwd=Path(__file__).resolve().parents[2],
            )
        deadline = time.monotonic() + 60
        while b" ready." not in self.log.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker did not start:\n{self.log.read_text()}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL: no warm shutdown, no ack, no cleanup."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGQUIT)  # cold shutdown: the test is over
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def _workers(chosen: Broker, tmp_path: Path) -> Iterator:
    workers: list[Worker] = []

    def make(**env: str) -> Worker:
        worker = Worker(chosen, tmp_path, env)
        workers.append(worker)
        return worker

    yield make
    for worker in workers:
        worker.stop()


# Both depend on their broker (hence on transactional_db) statically: pytest-django must know
# before `db` is set up that this test's data has to be committed for the worker to see it.
@pytest.fixture
def make_worker(broker, tmp_path) -> Iterator:
    yield from _workers(broker, tmp_path)


@pytest.fixture
def make_fs_worker(filesystem_broker, tmp_path) -> Iterator:
    yield from _workers(filesystem_broker, tmp_path)


def wait_for(predicate, *, timeout: float = 60, interval: float = 0.2, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")
