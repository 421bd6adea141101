"""PostgreSQL stopped under a running server, as an operator's restart does it: every path of
the same gunicorn answers 503 with Retry-After while it is down (the API and OTLP in the JSON
error shape with `database_unavailable`, the dashboard a page that says so, the probes their
JSON), and the first requests after it is back are served. Then killed under a load of
appends: every answer is a 201 or a 503, and every acknowledged append is kept, once.

The cluster is this test's own (initdb and pg_ctl on a free port in a temporary directory,
run as the `postgres` user when the tests run as root, since initdb refuses root), so stopping
it disturbs nobody else's database.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.otlp.conftest import export, span
from tests.test_deploy import production_env
from tests.test_production_layout import Processes, free_port, wait_for

BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)), None)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(BIN is None or not (BIN / "initdb").exists(), reason="no PostgreSQL binaries"),
    pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("runuser"),
                       reason="initdb refuses root and runuser is missing"),
]


class Cluster:
    """A throwaway PostgreSQL cluster: trust authentication, loopback only, no fsync."""

    def __init__(self, root: Path) -> None:
        self.root, self.data, self.port = root, root / "data", free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/contextstore"

    def pg(self, program: str, *args: str) -> None:
        command = [str(BIN / program), *args]  # type: ignore[operator]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        self.pg("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync")

    def start(self) -> None:
        self.pg("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-o",
                f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off", "start")

    def stop(self, mode: str = "fast") -> None:
        """fast: sessions are terminated (57P01), new connections refused, as a service restart;
        immediate: every server process quits at once, as a crash (recovery runs at the start)."""
        self.pg("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    root = Path(tempfile.mkdtemp(prefix="cs-outage-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    cluster = Cluster(root)
    cluster.init()
    cluster.start()
    try:
        with psycopg.connect(f"host=127.0.0.1 port={cluster.port} user=postgres dbname=postgres",
                             autocommit=True) as conn:
            conn.execute("CREATE DATABASE contextstore")
        yield cluster
    finally:
        subprocess.run([str(BIN / "pg_ctl"), "-D", str(cluster.data), "-m", "immediate", "stop"],  # type: ignore[operator]
                       capture_output=True, user="postgres" if os.geteuid() == 0 else None)
        shutil.rmtree(root, ignore_errors=True)


SESSION_SHELL = """
from django.contrib.auth import get_user_model
from django.test import Client
user = get_user_model().objects.create_user("pat", password="pw-for-tests-123")
client = Client()
client.force_login(user)
print(client.cookies["sessionid"].value)
"""


def test_a_stopped_database_is_503_everywhere_and_the_same_server_serves_once_it_is_back(
        cluster, tmp_path):
    env = production_env(tmp_path) | {
        "DATABASE_URL": cluster.url, "CELERY_BROKER_URL": "filesystem://",
        "ALLOWED_HOSTS": "127.0.0.1", "FORWARDED_ALLOW_IPS": "127.0.0.1",
        "GUNICORN_BIND": f"127.0.0.1:{free_port()}", "GUNICORN_WORKERS": "1",
        "GUNICORN_THREADS": "2", "DATABASE_CONNECT_TIMEOUT": "2",
    }
    processes = Processes(tmp_path, env)
    try:
        processes.run("collectstatic", "manage.py", "collectstatic", "--noinput")
        processes.run("migrate", "manage.py", "migrate", "--noinput")
        raw_token = processes.run("token", "manage.py", "create_api_token", "--workspace", "outage",
                                  ).strip().splitlines()[-1]
        session_id = processes.run("login", "manage.py", "shell", "-c", SESSION_SHELL).split()[-1]
        processes.start("web", sys.executable, "-m", "gunicorn", "--config", "project/gunicorn.py",
                        "project.wsgi")
        base = f"http://{env['GUNICORN_BIND']}"
        web = httpx.Client(base_url=base, timeout=10, headers={
            "X-Forwarded-Proto": "https", "Authorization": f"Bearer {raw_token}"})
        wait_for("/healthz", lambda: web.get("/healthz").status_code == 200, 60, processes)

        def api():
            return web.get("/api/v1/sessions/")

        def dashboard():  # the session cookie by hand: it is Secure, and this is plain HTTP
            return web.get("/", headers={"Cookie": f"sessionid={session_id}"})

        def otlp():
            return web.post("/otlp/v1/traces", json=export(span("00f067aa0ba902b7", "chat")))

        assert [api().status_code, dashboard().status_code, otlp().status_code,
                web.get("/readyz").status_code] == [200, 200, 200, 200]

        cluster.stop()
        for response in (api(), api(), otlp()):
            assert response.status_code == 503, response.text
            assert int(response.headers["Retry-After"]) >= 1
            assert response.json()["error"]["code"] == "database_unavailable"
        page = dashboard()
        assert page.status_code == 503 and int(page.headers["Retry-After"]) >= 1
        assert "The database is unavailable" in page.text
        for probe in ("/healthz", "/readyz"):
            response = web.get(probe)
            assert response.status_code == 503 and response.json()["checks"]["database"].startswith("error")

        cluster.start()  # returns once the server accepts connections
        back = time.monotonic()
        first = api()
        waited = time.monotonic() - back
        assert first.status_code == 200, first.text
        assert waited < 1.0, f"the first request after the restart took {waited:.2f}s"
        assert [dashboard().status_code, otlp().status_code, web.get("/readyz").status_code] == [
            200, 200, 200]
        print(f"first request after the restart answered 200 in {waited * 1000:.0f} ms")

        # Killed under load: appends in flight and arriving meet the crash; each answer is a 201
        # or a 503, and every append acknowledged is kept, counted once.
        thread_id = web.post("/api/v1/threads/ensure/", json={"session_key": "load"}).json()["id"]
        answers: list[tuple[int, str]] = []
        stop_load = threading.Event()

        def load() -> None:
            n = 0
            while not stop_load.is_set():
                n += 1
                client_id = f"{threading.get_ident()}-{n}"
                response = web.post(f"/api/v1/threads/{thread_id}/events/", json={"events": [
                    {"type": "Message", "role": "user", "content": f"turn {n}", "client_id": client_id}]})
                answers.append((response.status_code, client_id))

        loaders = [threading.Thread(target=load) for _ in range(2)]
        for loader in loaders:
            loader.start()
        try:
            wait_for("appends", lambda: len(answers) >= 10, 30, processes)
            cluster.stop("immediate")
            wait_for("503s", lambda: any(code == 503 for code, _ in answers), 30, processes)
            cluster.start()
            restarted = len(answers)
            wait_for("201s after the restart",
                     lambda: any(code == 201 for code, _ in answers[restarted:]), 30, processes)
        finally:
            stop_load.set()
            for loader in loaders:
                loader.join(30)
        assert {code for code, _ in answers} == {201, 503}, sorted({c for c, _ in answers})
        acknowledged = {client_id for code, client_id in answers if code == 201}
        stored, url = [], f"/api/v1/threads/{thread_id}/events/?limit=500"
        while url:
            page = web.get(url).json()
            stored += [event["client_id"] for event in page["results"]]
            url = page["next"]
        assert acknowledged <= set(stored) and len(stored) == len(set(stored))
        thread = web.get(f"/api/v1/threads/{thread_id}/").json()
        assert thread["event_count"] == thread["last_seq"] == len(stored)
        print(f"under load: {len(acknowledged)} appends acknowledged, "
              f"{sum(code == 503 for code, _ in answers)} answered 503, {len(stored)} stored")
        assert "Internal Server Error" not in processes.log("web")  # no 500 at any point
    finally:
        processes.kill_all()
