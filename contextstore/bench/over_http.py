"""What the benchmarks over HTTP share (bench_api, bench_turns): the client, a gunicorn to
measure, the event bodies they send, latency percentiles, and a thread filled to a size."""

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import urllib3
from django.conf import settings
from django.core.management.base import CommandError, OutputWrapper

from contextstore.services.common import Actor
from contextstore.services.workspaces import api_token_create, workspace_ensure

BODY = " ".join(["context"] * 56)  # about 60 words, like a chat turn


def message(i: int, tag: str) -> dict[str, Any]:
    return {"type": "Message", "role": "user" if i % 2 == 0 else "assistant",
            "content": f"turn {i}: {BODY}", "client_id": f"{tag}-{i}"}


def batch_body(start: int, size: int, tag: str) -> bytes:
    return json.dumps({"events": [message(start + i, tag) for i in range(size)]}).encode()


def bench_token(name: str) -> str:
    """A new write token of the "bench" workspace (created if missing)."""
    workspace, _ = workspace_ensure(slug="bench", name="Benchmarks")
    return api_token_create(workspace=workspace, name=name, scope="write", actor=Actor.system(name))[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Http:
    """The benchmarks' HTTP client: one keep-alive connection (urllib3), paths relative to
    `base_url`. The client shares the machine's CPUs with the server it measures and its own
    time is in every figure, so it should cost as little as it can: httpx cost 0.45 ms more CPU
    and 0.5-0.8 ms more latency per request on this machine."""

    def __init__(self, base_url: str, headers: dict[str, str] | None = None,
                 timeout: float = 120) -> None:
        url = urllib3.util.parse_url(base_url)
        if url.host is None:
            raise ValueError(f"{base_url!r} names no host")
        self.prefix = (url.path or "").rstrip("/") + "/"
        self.pool = urllib3.HTTPConnectionPool(url.host, url.port, maxsize=1, headers=headers,
                                               timeout=timeout)

    def get(self, path: str) -> urllib3.BaseHTTPResponse:
        return self.pool.request("GET", self.prefix + path.lstrip("/"))

    def post(self, path: str, body: Any) -> urllib3.BaseHTTPResponse:
        """POST `body`: bytes as they are, anything else as JSON."""
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        return self.pool.request("POST", self.prefix + path.lstrip("/"), body=body)

    def __enter__(self) -> "Http":
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.close()


def ok(response: urllib3.BaseHTTPResponse) -> urllib3.BaseHTTPResponse:
    """The response, if its status is 2xx."""
    if not 200 <= response.status < 300:
        raise CommandError(f"{response.status} {response.data[:200]!r}")
    return response


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(round(q * (len(ordered) - 1))), len(ordered) - 1)]


def start_server(stdout: OutputWrapper, workers: int | None, root: Path | None = None,
                 settings_env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """gunicorn with the production config on this database, serving this checkout or, with
    `root`, another one (its code first on the path); `settings_env`: more settings."""
    gunicorn = shutil.which("gunicorn") or str(Path(sys.executable).with_name("gunicorn"))
    if not Path(gunicorn).exists():
        raise CommandError("gunicorn is not installed; pass --url of a running server.")
    port = free_port()
    env = {
        **os.environ, "GUNICORN_BIND": f"127.0.0.1:{port}", "API_THROTTLE_RATE": "off",
        # Production mode: no per-query debug bookkeeping; plain HTTP on loopback.
        "DEBUG": "false", "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(40),
        "SECURE_SSL_REDIRECT": "false", "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "WARNING",
        "GUNICORN_MAX_REQUESTS": "0", **(settings_env or {}),
    }
    if workers:
        env["GUNICORN_WORKERS"] = str(workers)
    if root is not None:
        env["PYTHONPATH"] = str(root)
    root = root or Path(settings.BASE_DIR)
    server = subprocess.Popen(
        [gunicorn, "--config", str(root / "project" / "gunicorn.py"), "project.wsgi"],
        cwd=root, env=env, stdout=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    # The first schema request builds the schema: seconds on a loaded machine.
    deadline = time.monotonic() + 240  # a load average of 15 on 2 CPUs took more than 90 s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise CommandError("gunicorn exited during start-up.")
        try:
            if urllib3.request("GET", f"{url}/api/schema/", timeout=15, retries=False).status == 200:
                break
        except urllib3.exceptions.HTTPError:
            time.sleep(0.2)
    else:
        server.terminate()
        raise CommandError("gunicorn did not answer within 240 s.")
    stdout.write(f"started gunicorn on {url} (pid {server.pid})")
    return server, url


def load() -> str:
    """The machine's load average: the figures depend on what else runs on it."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


# Callable[..., ...]: called without arguments (see bench.core.timed).
def p50_each(calls: list[Callable[[], urllib3.BaseHTTPResponse | None]], samples: int) -> list[float]:
    """p50 of each call, the calls made in turn so that all see the same load. A call that is
    not a request (a floor timed in this process) returns None."""
    def checked(response: urllib3.BaseHTTPResponse | None) -> None:
        if response is not None:
            ok(response)

    for call in calls:
        for _ in range(10):  # warm caches and connections
            checked(call())
    latencies: list[list[float]] = [[] for _ in calls]
    for _ in range(samples):
        for call, mine in zip(calls, latencies, strict=True):
            began = time.perf_counter()
            response = call()
            mine.append((time.perf_counter() - began) * 1000)
            checked(response)
    return [percentile(mine, 0.5) for mine in latencies]


def p50(call: Callable[[], urllib3.BaseHTTPResponse | None], samples: int) -> float:
    return p50_each([call], samples)[0]


def fill(stdout: OutputWrapper, http: Http, thread_id: int, size: int, tag: str) -> None:
    """Append `size` events to the thread, in the largest batches the API takes (up to 1,000)."""
    began = time.perf_counter()
    per_request = min(settings.CONTEXTSTORE["MAX_EVENTS_PER_BATCH"], 1000)
    for start in range(0, size, per_request):
        count = min(per_request, size - start)
        response = http.post(f"threads/{thread_id}/events/",
                             batch_body(start, count, f"{tag}-fill-{thread_id}"))
        if response.status != 201:
            raise CommandError(f"fill failed: {response.status} {response.data[:200]!r}")
    stdout.write(f"  (filled a thread with {size:,} events in "
                 f"{time.perf_counter() - began:.1f} s)")
