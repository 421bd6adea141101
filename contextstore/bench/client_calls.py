"""bench_client's driver: one client's cost per call, in a process of its own so that another
checkout's client can be measured the same way (its clients/python first on PYTHONPATH). Run
by `manage.py bench_client` (contextstore/bench/client.py), which reads the JSON it prints:

    python -m contextstore.bench.client_calls URL TOKEN SAMPLES [TAG]

Imports nothing of Django or the server. Five clients make the same two calls in turns, inside
one running event loop (where agents' frameworks make them): bare urllib3 (the floor), bare
httpx.Client and httpx.AsyncClient (the same requests: JSON encoded and decoded, blobs in
base64), then ContextStore and AsyncContextStore through their operations. "get" reads a thread
(GET threads/{id}/); "commit" is commit_agent_session with one event and three blobs, what
LangGraph's put sends, each client to a session of its own (keys prefixed with TAG). Each
call's wall time and the process's CPU time around it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import contextstore_client
import httpx
import urllib3
from contextstore_client import AsyncContextStore, ContextStore

CLIENTS = ("urllib3", "httpx", "httpx async", "ContextStore", "AsyncContextStore")
CALLS = ("get", "commit")
WARM = 20  # untimed calls of each kind first: connections, caches

# LangGraph's put: a channel's value, the checkpoint, its metadata (sizes of a short chat's).
BLOBS: list[dict[str, Any]] = [
    {"key": "ch/messages/3", "data": b"m" * 2000, "content_type": "msgpack",
     "meta": {"channel": "messages", "version": "3"}},
    {"key": "cp/1", "data": b"c" * 600, "content_type": "msgpack", "meta": {"checkpoint_id": "1"}},
    {"key": "md/1", "data": b"d" * 200, "content_type": "msgpack", "meta": {"checkpoint_id": "1"}},
]


def checkpoint_event() -> dict[str, Any]:
    return {"type": "Checkpoint", "visible": False, "run_id": "run-1",
            "content": "checkpoint step 3 (loop)",
            "data": {"checkpoint_id": uuid.uuid4().hex, "parent_checkpoint_id": None, "checkpoint_ns": "",
                     "metadata": {"source": "loop", "step": 3, "run_id": "run-1"},
                     "channel_versions": {"messages": "3", "__start__": "2"}, "new_channels": ["messages"]}}


def commit_body(key: str) -> bytes:
    """What ContextStore.commit_agent_session sends, built the plain way (for the bare clients)."""
    return json.dumps({
        "app": "bench-client", "user_id": "", "key": key, "thread": "main", "create": True,
        "events": [{"client_id": uuid.uuid4().hex, **checkpoint_event()}],
        "state": None, "app_state": None, "user_state": None,
        "blobs": [{**b, "data": base64.b64encode(b["data"]).decode()} for b in BLOBS],
        "expected_last_seq": None, "batch_id": uuid.uuid4().hex,
    }).encode()


def checked(status: int, data: bytes) -> Any:
    if not 200 <= status < 300:
        raise SystemExit(f"{status} {data[:200]!r}")
    return json.loads(data)


def make_calls(url: str, token: str, thread_id: int, tag: str = "bench"
               ) -> tuple[dict[tuple[str, str], Callable[[], Any]], list[Callable[[], Any]]]:
    """Each (client, call)'s function (a coroutine function for the async clients), and what to
    close at the end."""
    api = url.rstrip("/") + "/api/v1/"
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json",
               "Content-Type": "application/json"}
    parsed = urllib3.util.parse_url(api)
    pool = urllib3.HTTPConnectionPool(parsed.host or "127.0.0.1", parsed.port, maxsize=1, headers=headers,
                                      timeout=30)
    plain = httpx.Client(base_url=api, headers=headers, timeout=30)
    aplain = httpx.AsyncClient(base_url=api, headers=headers, timeout=30)
    store = ContextStore(url, token)
    astore = AsyncContextStore(url, token)
    path = f"threads/{thread_id}/"

    def u_get() -> Any:
        response = pool.request("GET", "/api/v1/" + path)
        return checked(response.status, response.data)

    def u_commit() -> Any:
        response = pool.request("POST", "/api/v1/agent-sessions/commit/", body=commit_body(f"{tag}-u"))
        return checked(response.status, response.data)

    def h_get() -> Any:
        response = plain.get(path)
        return checked(response.status_code, response.content)

    def h_commit() -> Any:
        response = plain.post("agent-sessions/commit/", content=commit_body(f"{tag}-h"))
        return checked(response.status_code, response.content)

    async def a_get() -> Any:
        response = await aplain.get(path)
        return checked(response.status_code, response.content)

    async def a_commit() -> Any:
        response = await aplain.post("agent-sessions/commit/", content=commit_body(f"{tag}-a"))
        return checked(response.status_code, response.content)

    def s_commit() -> Any:
        return store.commit_agent_session("bench-client", "", f"{tag}-s", events=[checkpoint_event()],
                                          blobs=BLOBS, create=True)

    async def as_commit() -> Any:
        return await astore.commit_agent_session("bench-client", "", f"{tag}-as", events=[checkpoint_event()],
                                                 blobs=BLOBS, create=True)

    calls = {
        ("urllib3", "get"): u_get, ("urllib3", "commit"): u_commit,
        ("httpx", "get"): h_get, ("httpx", "commit"): h_commit,
        ("httpx async", "get"): a_get, ("httpx async", "commit"): a_commit,
        ("ContextStore", "get"): lambda: store.get_thread(thread_id), ("ContextStore", "commit"): s_commit,
        ("AsyncContextStore", "get"): lambda: astore.get_thread(thread_id),
        ("AsyncContextStore", "commit"): as_commit,
    }
    return calls, [pool.close, plain.close, aplain.aclose, store.close, astore.aclose]


async def measure(url: str, token: str, samples: int, tag: str = "bench") -> dict[str, Any]:
    with ContextStore(url, token) as setup:
        thread_id = setup.thread("bench-client").id
    calls, closers = make_calls(url, token, thread_id, tag)
    wall: dict[tuple[str, str], list[float]] = {k: [] for k in calls}
    cpu: dict[tuple[str, str], float] = dict.fromkeys(calls, 0.0)
    for i in range(WARM + samples):
        for key, function in calls.items():
            began, began_cpu = time.perf_counter(), time.process_time()
            result = function()
            if isinstance(result, Awaitable):
                await result
            took, took_cpu = time.perf_counter() - began, time.process_time() - began_cpu
            if i >= WARM:
                wall[key].append(took * 1000)
                cpu[key] += took_cpu * 1000
    for close in closers:
        done = close()
        if isinstance(done, Awaitable):
            await done
    return {"client": contextstore_client.__file__, "rows": [
        {"client": client, "call": name, "wall_p50": sorted(wall[client, name])[samples // 2],
         "cpu": cpu[client, name] / samples} for client, name in calls]}


def main() -> None:
    url, token, samples = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tag = sys.argv[4] if len(sys.argv) > 4 else "bench"
    print(json.dumps(asyncio.run(measure(url, token, samples, tag))))


if __name__ == "__main__":
    main()
