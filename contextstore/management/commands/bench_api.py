"""Load test of the agent API over HTTP on loopback.

    python manage.py bench_api                      # starts gunicorn on this database
    python manage.py bench_api --url http://127.0.0.1:8000 --token cs_...

Prints batch-append throughput (100 events per request) with 1, 4 and 16 concurrent clients,
single-event appends per second with one client, and p50/p95 latency of GET /context/ on
threads of 1k and 100k events. Without --url it starts gunicorn with the production config
(project/gunicorn.py) against the configured database, with throttling off, and stops it after.
"""

import json
import logging
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from contextstore.services.common import Actor
from contextstore.services.workspaces import api_token_create, workspace_ensure

BODY = " ".join(["context"] * 56)  # about 60 words, like a chat turn


def message(i: int, tag: str) -> dict[str, Any]:
    return {"type": "Message", "role": "user" if i % 2 == 0 else "assistant",
            "content": f"turn {i}: {BODY}", "client_id": f"{tag}-{i}"}


def batch_body(start: int, size: int, tag: str) -> bytes:
    return json.dumps({"events": [message(start + i, tag) for i in range(size)]}).encode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(round(q * (len(ordered) - 1))), len(ordered) - 1)]


class Command(BaseCommand):
    help = "Measure the agent API over HTTP: batch and single appends, context render latency."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", help="A running server; default: start gunicorn here.")
        parser.add_argument("--token", help="A write token for --url (default: create one).")
        parser.add_argument("--workers", type=int, default=None,
                            help="gunicorn workers when starting one (default: its config).")
        parser.add_argument("--seconds", type=float, default=5.0,
                            help="Duration of each throughput run.")
        parser.add_argument("--large", type=int, default=100_000,
                            help="Events in the large thread for the context latency test.")
        parser.add_argument("--samples", type=int, default=300,
                            help="GET /context/ requests per thread size.")

    def handle(self, *args: Any, url: str | None, token: str | None, workers: int | None,
               seconds: float, large: int, samples: int, **options: Any) -> None:
        logging.getLogger("httpx").setLevel(logging.WARNING)  # no line per request
        server = None
        if token is None:
            workspace, _ = workspace_ensure(slug="bench", name="Benchmarks")
            token = api_token_create(workspace=workspace, name="bench_api", scope="write",
                                     actor=Actor.system("bench_api"))[1]
        if url is None:
            server, url = self.start_server(workers)
        try:
            self.run(url.rstrip("/"), token, seconds, large, samples)
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)

    # -- server

    def start_server(self, workers: int | None) -> tuple[subprocess.Popen, str]:
        gunicorn = shutil.which("gunicorn") or str(Path(sys.executable).with_name("gunicorn"))
        if not Path(gunicorn).exists():
            raise CommandError("gunicorn is not installed; pass --url of a running server.")
        port = free_port()
        env = {
            **os.environ, "GUNICORN_BIND": f"127.0.0.1:{port}", "API_THROTTLE_RATE": "off",
            # Production mode: no per-query debug bookkeeping; plain HTTP on loopback.
            "DEBUG": "false", "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(40),
            "SECURE_SSL_REDIRECT": "false", "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "WARNING",
            "GUNICORN_MAX_REQUESTS": "0",
        }
        if workers:
            env["GUNICORN_WORKERS"] = str(workers)
        root = Path(settings.BASE_DIR)
        server = subprocess.Popen(
            [gunicorn, "--config", str(root / "project" / "gunicorn.py"), "project.wsgi"],
            cwd=root, env=env, stdout=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise CommandError("gunicorn exited during start-up.")
            try:
                if httpx.get(f"{url}/api/schema/", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            server.terminate()
            raise CommandError("gunicorn did not answer within 30 s.")
        self.stdout.write(f"started gunicorn on {url} (pid {server.pid})")
        return server, url

    # -- measurements

    def run(self, url: str, token: str, seconds: float, large: int, samples: int) -> None:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        run_tag = uuid.uuid4().hex[:8]

        def client() -> httpx.Client:
            return httpx.Client(base_url=f"{url}/api/v1/", headers=headers, timeout=120)

        def new_thread(http: httpx.Client, name: str) -> int:
            response = http.post("threads/ensure/", json={"session_key": f"bench-{run_tag}",
                                                          "name": name})
            response.raise_for_status()
            return response.json()["id"]

        # The figures depend on the machine and what else runs on it: say so with them.
        self.stdout.write(f"server {url}, database {settings.DATABASES['default']['ENGINE']}, "
                          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        with client() as http:
            for clients in (1, 4, 16):
                rate = self.batch_appends(client, new_thread, http, clients, seconds, run_tag)
                self.stdout.write(f"batch appends (100/request), {clients:>2} clients: "
                                  f"{rate:>9,.0f} events/s")
            rate = self.single_appends(http, new_thread(http, "single"), seconds, run_tag)
            self.stdout.write(f"single-event appends, 1 client:          {rate:>9,.0f} events/s")
            for index, size in enumerate((1000, large)):
                thread_id = new_thread(http, f"context-{index}-{size}")
                self.fill(http, thread_id, size, run_tag)
                latencies = self.context_latency(http, thread_id, samples)
                self.stdout.write(
                    f"GET /context/ on {size:>7,} events: p50 {percentile(latencies, 0.5):6.2f} ms,"
                    f" p95 {percentile(latencies, 0.95):6.2f} ms")

    def batch_appends(self, client: Callable[[], httpx.Client], new_thread: Callable,
                      http: httpx.Client, clients: int, seconds: float, tag: str) -> float:
        """Each client appends batches of 100 to its own thread for `seconds`."""
        thread_ids = [new_thread(http, f"batch-{clients}-{i}") for i in range(clients)]
        counts = [0] * clients
        errors: list[str] = []
        start = threading.Barrier(clients + 1)
        stop_at = [0.0]

        def worker(index: int) -> None:
            path = f"threads/{thread_ids[index]}/events/"
            with client() as mine:
                n = 0
                body = batch_body(0, 100, f"{tag}-{clients}-{index}")
                start.wait()
                while time.perf_counter() < stop_at[0]:
                    response = mine.post(path, content=body)
                    if response.status_code != 201:
                        errors.append(f"{response.status_code} {response.text[:200]}")
                        return
                    n += 1
                    counts[index] += 100
                    body = batch_body(n * 100, 100, f"{tag}-{clients}-{index}")

        workers = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
        for w in workers:
            w.start()
        began = time.perf_counter()
        stop_at[0] = began + seconds
        start.wait()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - began
        if errors:
            raise CommandError(f"append failed: {errors[0]}")
        return sum(counts) / elapsed

    def single_appends(self, http: httpx.Client, thread_id: int, seconds: float, tag: str) -> float:
        path = f"threads/{thread_id}/events/"
        n = 0
        began = time.perf_counter()
        while time.perf_counter() - began < seconds:
            body = json.dumps({"events": [message(n, f"{tag}-single")]}).encode()
            response = http.post(path, content=body)
            if response.status_code != 201:
                raise CommandError(f"append failed: {response.status_code} {response.text[:200]}")
            n += 1
        return n / (time.perf_counter() - began)

    def fill(self, http: httpx.Client, thread_id: int, size: int, tag: str) -> None:
        began = time.perf_counter()
        per_request = min(settings.CONTEXTSTORE["MAX_EVENTS_PER_BATCH"], 1000)
        for start in range(0, size, per_request):
            count = min(per_request, size - start)
            response = http.post(f"threads/{thread_id}/events/",
                                 content=batch_body(start, count, f"{tag}-fill-{thread_id}"))
            if response.status_code != 201:
                raise CommandError(f"fill failed: {response.status_code} {response.text[:200]}")
        self.stdout.write(f"  (filled a thread with {size:,} events in "
                          f"{time.perf_counter() - began:.1f} s)")

    def context_latency(self, http: httpx.Client, thread_id: int, samples: int) -> list[float]:
        path = f"threads/{thread_id}/context/"
        for _ in range(10):  # warm caches and connections
            http.get(path).raise_for_status()
        latencies = []
        for _ in range(samples):
            began = time.perf_counter()
            response = http.get(path)
            latencies.append((time.perf_counter() - began) * 1000)
            response.raise_for_status()
        return latencies
