"""A fake contextstore API for the client's tests, and helpers that drive both clients."""

from __future__ import annotations

import inspect
import json
from typing import Any

import httpx
from contextstore_client import AsyncThreadHandle, ContextStore, Thread, ThreadHandle

URL = "http://cs.test"
TOKEN = "cs_test"
Answer = Any  # a dict (200 JSON), (status, JSON), a function of the request, or an exception


def error(status: int, code: str = "error", message: str = "refused", **details: Any) -> tuple[int, Any]:
    return status, {"error": {"code": code, "message": message, "details": details}}


def respond(answer: Any) -> httpx.Response:
    """(status, JSON) or JSON (200) as a response."""
    status, body = answer if isinstance(answer, tuple) else (200, answer)
    return httpx.Response(status, json=body)


class FakeApi:
    """Answers each (method, path below /api/v1/, percent-encoded) from its own queue, the last
    answer repeating, and keeps every request it was sent. An unknown route answers 404 in the
    API's shape."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[Answer]] = {}
        self.seen: list[httpx.Request] = []

    def on(self, method: str, path: str, *answers: Answer) -> FakeApi:
        self.routes.setdefault((method, path), []).extend(answers)
        return self

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        path = request.url.raw_path.decode().partition("?")[0].removeprefix("/api/v1/")  # as sent
        queue = self.routes.get((request.method, path))
        if not queue:
            return respond(error(404, "not_found", f"no route {request.method} {path}"))
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            response: httpx.Response = answer(request)
            return response
        return respond(answer)

    def bodies(self, method: str | None = None) -> list[Any]:
        return [json.loads(r.content) if r.content else None for r in self.seen
                if method is None or r.method == method]


async def settle(value: Any) -> Any:
    """A client call's result: awaited for the asyncio client, iterators drained into lists."""
    if inspect.isasyncgen(value):
        return [item async for item in value]
    if inspect.isawaitable(value):
        return await value
    if inspect.isgenerator(value):
        return list(value)
    return value


def thread_json(**changes: Any) -> dict[str, Any]:
    return {"id": 7, "session": 1, "session_key": "conversation-42", "name": "main", "user_id": "ann",
            **changes}


def handle_of(store: Any, **changes: Any) -> Any:
    """A handle on thread 7 made without a request (as the MCP server makes them)."""
    cls = ThreadHandle if isinstance(store, ContextStore) else AsyncThreadHandle
    return cls(store, Thread(**thread_json(**changes)))
