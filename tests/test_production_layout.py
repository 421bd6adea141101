"""The production layout as plain processes, since no Docker engine runs here: what compose.yml
starts, in its order — static files collected, the one-shot migrate, gunicorn with the
production settings, a Celery worker and beat — against the local PostgreSQL and Redis.

One agent pushes events through the API past its summarizer's token budget and the worker's
collapse shows up through the API; then everything is shut down with SIGTERM and must exit
cleanly. Runs in the PostgreSQL pass of the suite (it needs a PostgreSQL server to create its
own database on) and is skipped on SQLite.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest
import redis

from tests.test_deploy import ROOT, production_env

# Redis database 7 of the local server belongs to this test (the suite's other users take 0).
REDIS_URL = "redis://127.0.0.1:6379/7"
BUDGET = 2000  # tokens of visible history the thread may hold before the worker summarizes
PRESERVE_RECENT = 4

DATABASE_URL = os.environ.get("DATABASE_URL", "")
pytestmark = [
    pytest.mark.worker,
    pytest.mark.postgres,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not DATABASE_URL.startswith(("postgres://", "postgresql://")),
                       reason="the production layout runs on PostgreSQL (set DATABASE_URL)"),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def scratch_database() -> Iterator[str]:
    """A new, empty database beside the suite's own, dropped afterwards; yields its URL."""
    parts = urlsplit(DATABASE_URL)
    name = parts.path.lstrip("/") + "_layout"
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Processes:
    """Long-running children, each in its own process group, output in a log file."""

    def __init__(self, logs: Path, env: dict[str, str]) -> None:
        self.logs, self.env = logs, env
        self.running: dict[str, subprocess.Popen] = {}

    def run(self, name: str, *args: str) -> str:
        """A one-shot command (collectstatic, migrate, create_api_token); returns its stdout."""
        result = subprocess.run([sys.executable, *args], cwd=ROOT, env=self.env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, f"{name} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def start(self, name: str, *args: str) -> None:
        out = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        self.running[name] = subprocess.Popen(
            args, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        out.close()

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def alive(self) -> None:
        for name, proc in self.running.items():
            assert proc.poll() is None, f"{name} exited early:\n{self.log(name)[-3000:]}"

    def stop(self, name: str, timeout: float = 30) -> int:
        """SIGTERM, the signal compose and orchestrators send; the exit code it ends with."""
        proc = self.running.pop(name)
        proc.send_signal(signal.SIGTERM)
        return proc.wait(timeout=timeout)

    def kill_all(self) -> None:
        """After a failure: leave nothing behind (worker children share the group)."""
        for proc in self.running.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self.running.clear()


def wait_for(what: str, check, timeout: float, processes: Processes):
    deadline = time.monotonic() + timeout
    while True:
        processes.alive()
        try:
            result = check()
        except httpx.TransportError:
            result = None
        if result:
            return result
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {name}\n{processes.log(name)[-2000:]}"
                              for name in processes.running)
            raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{tails}")
        time.sleep(0.25)


def messages(n: int, start: int) -> list[dict]:
    body = " ".join(["the agent weighed the context of the request carefully"] * 8)
    return [{"type": "Message", "role": "user" if i % 2 == 0 else "assistant",
             "content": f"turn {i}: {body}", "client_id": f"m-{i}"}
            for i in range(start, start + n)]


@pytest.fixture
def layout(tmp_path: Path) -> Iterator[Processes]:
    redis.Redis.from_url(REDIS_URL).flushdb()
    with scratch_database() as database_url:
        env = production_env(tmp_path) | {
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": REDIS_URL,
            "CACHE_URL": REDIS_URL,
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "CSRF_TRUSTED_ORIGINS": "https://127.0.0.1",
            # The proxy in front is this test: it connects from loopback, gunicorn's default.
            "FORWARDED_ALLOW_IPS": "127.0.0.1",
            "GUNICORN_BIND": f"127.0.0.1:{free_port()}",
            "GUNICORN_WORKERS": "2",
            "GUNICORN_THREADS": "4",
            # As compose.yml: /readyz wants a worker's heartbeat.
            "WORKER_HEARTBEAT_MAX_AGE": "60",
        }
        processes = Processes(tmp_path, env)
        try:
            yield processes
        finally:
            processes.kill_all()
            redis.Redis.from_url(REDIS_URL).flushdb()


def test_the_production_layout_serves_summarizes_and_shuts_down_cleanly(layout, tmp_path):
    env = layout.env
    # The image's build step, then the web server on an empty database.
    layout.run("collectstatic", "manage.py", "collectstatic", "--noinput")
    layout.start("web", sys.executable, "-m", "gunicorn", "--config", "project/gunicorn.py",
                 "project.wsgi")
    base = f"http://{env['GUNICORN_BIND']}"
    web = httpx.Client(base_url=base, timeout=10)
    wait_for("/healthz", lambda: web.get("/healthz").status_code == 200, 30, layout)

    # Not ready before the one-shot migrate has run, ready after.
    unready = web.get("/readyz")
    assert unready.status_code == 503
    assert unready.json()["checks"]["broker"] == "ok"
    assert re.match(r"error: \d+ migration\(s\) not applied",
                    unready.json()["checks"]["migrations"])
    layout.run("migrate", "manage.py", "migrate", "--noinput")
    # Migrated, but no worker yet: /readyz names it.
    no_worker = web.get("/readyz")
    assert no_worker.status_code == 503, no_worker.text
    assert no_worker.json()["checks"] == {"database": "ok", "broker": "ok", "migrations": "ok",
                                          "worker": "error: no worker has written a heartbeat yet",
                                          "otlp_derivation": "ok, 0 traces waiting, oldest 0 s"}

    layout.start("worker", sys.executable, "-m", "celery", "--app", "project", "worker",
                 "--loglevel", "INFO", "--concurrency", "2", "--hostname", "layout@%h")
    wait_for("/readyz with the worker's heartbeat",
             lambda: web.get("/readyz").status_code == 200, 60, layout)
    assert re.fullmatch(r"ok, heartbeat \d+ s ago", web.get("/readyz").json()["checks"]["worker"])
    layout.start("beat", sys.executable, "-m", "celery", "--app", "project", "beat",
                 "--loglevel", "INFO", "--schedule", str(tmp_path / "celerybeat-schedule"))
    raw_token = layout.run("token", "manage.py", "create_api_token", "--workspace", "layout",
                           ).strip().splitlines()[-1]

    # Behind the TLS proxy: plain HTTP is redirected, forwarded HTTPS is served with HSTS.
    assert web.get("/api/v1/threads/").status_code == 301
    api = httpx.Client(base_url=base, timeout=30, headers={
        "Authorization": f"Bearer {raw_token}", "X-Forwarded-Proto": "https",
        "X-Request-ID": "layout-test-1",
    })
    response = api.post("/api/v1/threads/ensure/", json={"session_key": "layout-1", "agent": "t"})
    assert response.status_code == 201, response.text
    assert response.headers["Strict-Transport-Security"].startswith("max-age=31536000")
    assert response.headers["X-Request-ID"] == "layout-test-1"
    thread_id = response.json()["id"]
    response = api.put(f"/api/v1/threads/{thread_id}/summarizer/", json={
        "token_budget": {"max_tokens": BUDGET, "preserve_recent": PRESERVE_RECENT}})
    assert response.status_code == 200, response.text

    pushed = 0
    for start in range(0, 40, 10):
        response = api.post(f"/api/v1/threads/{thread_id}/events/",
                            json={"events": messages(10, start)})
        assert response.status_code == 201, response.text
        pushed += sum(e["token_count"] for e in response.json()["events"])
    assert pushed > BUDGET

    def summarized() -> dict | None:
        thread = api.get(f"/api/v1/threads/{thread_id}/").json()
        return thread if thread["active_tokens"] <= BUDGET else None

    thread = wait_for("the worker's collapse", summarized, 60, layout)
    assert thread["last_seq"] == 41  # 40 messages and the Summary event
    summaries = api.get(f"/api/v1/threads/{thread_id}/events/", params={"type": "Summary"})
    [summary] = summaries.json()["results"]
    assert summary["status"] == "active" and summary["position"] == 1
    assert summary["data"]["start_position"] == 1
    assert summary["data"]["end_position"] <= 40 - PRESERVE_RECENT
    end = summary["data"]["end_position"]
    listed = {status: [e["seq"] for e in api.get(
        f"/api/v1/threads/{thread_id}/events/", params={"status": status}).json()["results"]]
        for status in ("collapsed", "active")}
    assert listed["collapsed"] == list(range(1, end + 1))  # kept, out of the working context
    # The rest stays active, the summary among them (the worker may have run before the
    # last batch arrived, so the summary's seq can sit between two batches).
    assert sorted(listed["active"]) == list(range(end + 1, thread["last_seq"] + 1))
    assert len(listed["active"]) - 1 >= PRESERVE_RECENT

    # Static files: the hashed names the manifest storage wrote, served by whitenoise forever.
    manifest = json.loads((tmp_path / "staticfiles" / "staticfiles.json").read_text())
    hashed = manifest["paths"]["admin/css/base.css"]
    asset = web.get(f"/static/{hashed}", headers={"X-Forwarded-Proto": "https"})
    assert asset.status_code == 200
    assert "immutable" in asset.headers["Cache-Control"]

    # SIGTERM everything, as `docker compose down` does; each must exit 0 in time.
    web.close()
    api.close()
    assert {name: layout.stop(name) for name in ("beat", "worker", "web")} == {
        "beat": 0, "worker": 0, "web": 0}

    # The web server's log is JSON lines carrying the request ids.
    lines = [json.loads(line) for line in layout.log("web").splitlines() if line.startswith("{")]
    traced = [line for line in lines if line.get("request_id") == "layout-test-1"]
    assert any(line["logger"] == "contextstore.request" and line["status"] == 201
               for line in traced)
    assert any(line["logger"] == "gunicorn.error" for line in lines)
    # The worker's log is JSON too, and shows the summary job that made the collapse.
    done = [json.loads(line) for line in layout.log("worker").splitlines()
            if line.startswith("{") and "summarize_job" in line and "succeeded" in line]
    assert len(done) == 1 and "'collapse'" in done[0]["message"]
