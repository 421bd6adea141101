"""The asyncio client: AsyncContextStore and AsyncThreadHandle."""

from __future__ import annotations

from typing import Any

import httpx
from tenacity import AsyncRetrying

from contextstore_client._http import (
    _checked,
    _http_options,
    _param,
    _retry_policy,
    _Transient,
    _transport_failure,
)
from contextstore_client.client import _RAISE, _AgentSessions, _batch, _Handle, _llm_call_events
from contextstore_client.errors import Forbidden, NotFound
from contextstore_client.results import AppendedEvent, Context, Thread, _build, _rebuilt


class AsyncContextStore(_AgentSessions):
    """The asyncio twin of ContextStore (httpx.AsyncClient) with the same retry rules and
    errors; it offers the framework-session calls, an agent's loop on a thread (append,
    context, log_llm_call: AsyncThreadHandle), recorded renders and raw `request`."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0, retries: int = 4,
                 backoff: float = 0.25, max_backoff: float = 10.0,
                 transport: httpx.AsyncBaseTransport | None = None):
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._http = httpx.AsyncClient(**_http_options(base_url, token, timeout, transport))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncContextStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def request(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
                      headers: dict[str, str] | None = None, idempotent: bool | None = None,
                      content: bytes | None = None) -> httpx.Response:
        """ContextStore.request's rules, awaited: see there."""
        if idempotent is None:
            idempotent = method.upper() != "POST"
        if params:
            params = {k: _param(v) for k, v in params.items() if v is not None}
        retrying = AsyncRetrying(**_retry_policy(self.retries, self.backoff, self.max_backoff))
        try:
            async for attempt in retrying:
                with attempt:
                    try:
                        response = await self._http.request(method, path, json=json, params=params,
                                                            headers=headers, content=content)
                    except httpx.TransportError as exc:
                        raise _transport_failure(method, path, exc, idempotent) from exc
                    return _checked(response, idempotent)
        except _Transient as last:
            raise last.failure from last.failure.__cause__
        raise AssertionError("unreachable: tenacity either returns or raises")

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = await self.request(method, path, **kwargs)
        return response.json() if response.content else None

    def _call(self, method: str, path: str, *, parse: Any = None, missing: Any = _RAISE,
              **kwargs: Any) -> Any:
        async def call() -> Any:
            try:
                body = await self._json(method, path, **kwargs)
            except NotFound:
                if missing is _RAISE:
                    raise
                return missing
            return parse(body) if parse else body
        return call()

    async def thread(self, session_key: str, *, user_id: str = "", agent: str = "",
                     name: str = "main") -> AsyncThreadHandle:
        """The thread `name` of session (user_id, session_key), created with it as needed."""
        data = await self._json("POST", "threads/ensure/", idempotent=True, json={
            "session_key": session_key, "user_id": user_id, "agent": agent, "name": name})
        return AsyncThreadHandle(self, _build(Thread, data))

    async def get_thread(self, thread_id: int) -> AsyncThreadHandle:
        return AsyncThreadHandle(self, _build(Thread, await self._json("GET", f"threads/{thread_id}/")))

    async def render(self, render_id: str) -> Context:
        """A recorded render rebuilt: exactly the messages that call was given."""
        return _rebuilt(await self._json("GET", f"renders/{render_id}/"))

    async def render_diff(self, a: str, b: str) -> dict[str, Any]:
        diff: dict[str, Any] = await self._json("GET", f"renders/{a}/diff/{b}/")
        return diff


class AsyncThreadHandle(_Handle):
    """An agent's loop on one thread, awaited: ThreadHandle's append, context and
    log_llm_call, with the same rules (retry-safe batches, LLM calls naming the last render)."""

    client: AsyncContextStore

    async def refresh(self) -> Thread:
        self.thread = _build(Thread, await self.client._json("GET", self._path))
        return self.thread

    async def append(self, events: list[dict[str, Any]]) -> list[AppendedEvent]:
        """See ThreadHandle.append."""
        data = await self.client._json("POST", self._path + "events/", idempotent=True,
                                       json=_batch(events, self.last_render_id))
        return [_build(AppendedEvent, e) for e in data["events"]]

    async def append_one(self, type: str, content: str = "", **fields: Any) -> AppendedEvent:
        return (await self.append([{"type": type, "content": content, **fields}]))[0]

    async def log_llm_call(self, model: str, *, messages: list[dict[str, Any]] | None = None,
                           input_tokens: int | None = None, output_tokens: int | None = None,
                           cost: float | None = None, run_id: str | None = None,
                           **data: Any) -> list[AppendedEvent]:
        """See ThreadHandle.log_llm_call."""
        usage = {"input_tokens": input_tokens, "output_tokens": output_tokens, "cost": cost}
        return await self.append(_llm_call_events(model, messages, usage, run_id, data))

    async def context(self, *, max_tokens: int | None = None, strip_thinking: bool = False,
                      format: str = "raw", on_oversize: str = "skip", record: bool = True) -> Context:
        """See ThreadHandle.context."""
        params = {"max_tokens": max_tokens, "strip_thinking": strip_thinking, "format": format,
                  "on_oversize": on_oversize, "record": record}
        path = self._path + "context/"
        try:
            data = await self.client._json("GET", path, params=params)
        except Forbidden:
            if not record:
                raise
            data = await self.client._json("GET", path, params={**params, "record": False})
        return self._rendered(data)

    async def llm_call(self, seq: int) -> dict[str, Any]:
        """What the LLM call logged at `seq` was sent: its render rebuilt, or its logged messages."""
        sent: dict[str, Any] = await self.client._json("GET", self._path + f"llm-calls/{seq}/")
        return sent
