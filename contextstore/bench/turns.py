"""Two versions of the agent API side by side, request by request in turns.

    git worktree add --detach ../base <commit>
    python manage.py bench_turns --other ../base      # starts both with gunicorn, one worker each
    python manage.py bench_turns --url URL --other-url URL2 --token cs_...

Sequential load runs on a shared machine drift by tens of percent from one run to the next;
timing each request of one version next to the same request of the other ranks two versions
where sequential runs can't. Both servers use this database (the other checkout must run on its
schema); each side appends to and reads its own thread of --size events. Prints, per request
kind, the p50 of each side and their ratio. The framework saves (`agent-sessions/commit/`, as
the ADK, Agents SDK and LangGraph adapters send them) and ADK's create_session (a new session
each time) go to sessions of their own.
"""

import base64
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import urllib3
from django.core.management.base import CommandError, OutputWrapper

from contextstore.bench.over_http import (
    BODY,
    Http,
    batch_body,
    bench_token,
    fill,
    load,
    ok,
    p50_each,
    start_server,
)


def commit_body(kind: str, n: int, tag: str) -> dict[str, Any]:
    """A framework's save as its adapter sends it (shapes as bench_peers' drivers make them):
    an ADK event of a run that changes every second event, an Agents SDK turn of three items,
    a LangGraph checkpoint with its five blobs; each with a batch id, into a session per side
    and framework."""
    def client_id() -> str:
        return uuid.uuid4().hex

    body: dict[str, Any] = {"app": f"turns-{kind}", "user_id": "", "key": tag, "create": True,
                            "batch_id": client_id()}
    text = f"turn {n}: {BODY}"
    if kind == "adk":
        body["events"] = [{"type": "Message", "role": "user", "content": text, "client_id": client_id(),
                           "run_id": f"run-{n // 2}", "step": "user", "data": {"adk": {
                               "author": "user", "content": {"parts": [{}], "role": "user"}}}}]
    elif kind == "agents":
        body["events"] = [
            {"type": "Message", "role": "user", "content": text, "client_id": client_id()},
            {"type": "ToolCall", "role": "assistant", "call_id": f"call-{n}", "client_id": client_id(),
             "data": {"tool_calls": [{"id": f"call-{n}", "name": "lookup", "arguments": "{}"}]}},
            {"type": "ToolResult", "role": "tool", "content": text, "call_id": f"call-{n}",
             "client_id": client_id(), "data": {"tool_call_id": f"call-{n}"}}]
    else:
        cid = client_id()
        blob = base64.b64encode(text.encode()[:300]).decode()
        body["events"] = [{"type": "Checkpoint", "client_id": cid, "visible": False,
                           "run_id": f"run-{n // 3}", "content": f"checkpoint step {n}",
                           "data": {"checkpoint_id": cid, "metadata": {"step": n}}}]
        body["blobs"] = [{"key": key, "data": blob, "content_type": "msgpack"} for key in (
            f"ch/question/{n}", f"ch/answer/{n}", f"ch/turns/{n}", f"cp/{cid}", f"md/{cid}")]
    return body


class TurnsBench:
    """bench_turns' comparison, written to `stdout` (the command's)."""

    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout

    def run(self, *, other: str | None, url: str | None, other_url: str | None,
            token: str | None, samples: int, size: int) -> None:
        if (other is None) == (other_url is None):
            raise CommandError("Give the other version as --other PATH or --other-url URL.")
        if other is not None and not (Path(other) / "manage.py").exists():
            raise CommandError(f"{other} is not a checkout of contextstore.")
        token = token or bench_token("bench_turns")
        servers = []
        try:
            if url is None:
                server, url = start_server(self.stdout, 1)
                servers.append(server)
            if other_url is None:
                assert other is not None  # one of the two is given (checked above)
                server, other_url = start_server(self.stdout, 1, Path(other).resolve())
                servers.append(server)
            self.compare(url.rstrip("/"), other_url.rstrip("/"), token, samples, size)
        finally:
            for server in servers:
                server.terminate()
                server.wait(timeout=30)

    def compare(self, url: str, other_url: str, token: str, samples: int, size: int) -> None:
        tag = uuid.uuid4().hex[:8]
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        with ExitStack() as clients:
            sides = {}
            for name, base in (("this", url), ("other", other_url)):
                http = clients.enter_context(Http(f"{base}/api/v1/", headers))
                thread_id = ok(http.post("threads/ensure/", {
                    "session_key": f"turns-{tag}-{name}", "name": name})).json()["id"]
                fill(self.stdout, http, thread_id, size, f"{tag}-{name}")
                sides[name] = (http, f"threads/{thread_id}/", [0])
            self.turns(sides, url, other_url, tag, samples, size)

    def turns(self, sides: dict[str, tuple], url: str, other_url: str, tag: str, samples: int,
              size: int) -> None:
        def kinds(name: str) -> dict[str, Any]:
            http, thread, n = sides[name]

            def append(count: int) -> urllib3.BaseHTTPResponse:
                n[0] += 1
                return http.post(f"{thread}events/", batch_body(
                    n[0] * 100, count, f"{tag}-{name}-{count}"))

            def commit(kind: str) -> urllib3.BaseHTTPResponse:
                n[0] += 1
                return http.post("agent-sessions/commit/", commit_body(kind, n[0], f"{tag}-{name}"))

            def create() -> urllib3.BaseHTTPResponse:  # as ADK's create_session sends it
                n[0] += 1
                return http.post("agent-sessions/", {"app": "turns-create", "user_id": "u",
                                                     "key": f"{tag}-{name}-{n[0]}", "state": {}})

            return {
                "ADK create_session": create,
                "ADK append_event (commit)": lambda: commit("adk"),
                "Agents add_items(3) (commit)": lambda: commit("agents"),
                "LangGraph put (commit)": lambda: commit("langgraph"),
                "single-event append": lambda: append(1),
                "batch of 100 events": lambda: append(100),
                "GET /threads/{id}/": lambda: http.get(thread),
                "GET /state/": lambda: http.get(f"{thread}state/"),
                "GET /context/ 8k": lambda: http.get(f"{thread}context/?max_tokens=8000"),
                "GET /context/ 8k record=true": lambda: http.get(
                    f"{thread}context/?max_tokens=8000&record=true"),
            }

        mine, theirs = kinds("this"), kinds("other")
        self.stdout.write(f"this {url}, other {other_url}, {size:,}-event threads, {samples} "
                          f"requests of each kind per side, load average {load()}")
        for kind in mine:
            this, that = p50_each([mine[kind], theirs[kind]], samples)
            self.stdout.write(f"{kind + ' p50':<34} this {this:7.2f} ms   other {that:7.2f} ms   "
                              f"this/other {this / that:.3f}")
        self.stdout.write(f"load average after the run {load()}")

