"""The asyncio client: AsyncContextStore and AsyncThreadHandle, ContextStore's and
ThreadHandle's twins with the same operations (awaited), retry rules and errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal, overload

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
from contextstore_client._ops import Awaiting, Call
from contextstore_client._store import SessionFilters, StoreOps, session_params
from contextstore_client._threads import EventFilters, ThreadOps, event_params
from contextstore_client.results import Event, Session, _build, _event

if TYPE_CHECKING:  # typing.Unpack is 3.11+; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["AsyncContextStore", "AsyncThreadHandle"]

History = list[dict[str, Any]]  # get_recent_history(raw=True): the raw interactions


class AsyncContextStore(StoreOps, Awaiting):
    """ContextStore over httpx.AsyncClient: every method a coroutine (`iter_*`: async iterators)."""

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

        async def attempt() -> httpx.Response:
            try:
                response = await self._http.request(method, path, json=json, params=params,
                                                    headers=headers, content=content)
            except httpx.TransportError as exc:
                raise _transport_failure(method, path, exc, idempotent) from exc
            return _checked(response, idempotent)

        try:  # the first attempt outside tenacity, as ContextStore.request
            return await attempt()
        except _Transient as exc:
            failures = [exc]
        retrying = AsyncRetrying(**_retry_policy(self.retries, self.backoff, self.max_backoff))
        try:
            async for tried in retrying:
                with tried:
                    if failures:
                        raise failures.pop()
                    return await attempt()
        except _Transient as last:
            raise last.failure from last.failure.__cause__
        raise AssertionError("unreachable: tenacity either returns or raises")

    async def _send(self, call: Call) -> Any:
        return call.answer(await self.request(call.method, call.path, **call.options))

    async def _pages(self, path: str, params: dict[str, Any] | None = None) -> AsyncIterator[dict[str, Any]]:
        """Every item of a paginated list, one page at a time, following `next` links."""
        page = await self._send(Call("GET", path, {"params": params}))
        while True:
            for item in page["results"]:
                yield item
            if not page.get("next"):
                return
            page = await self._send(Call("GET", page["next"]))

    async def iter_sessions(self, **filters: Unpack[SessionFilters]) -> AsyncIterator[Session]:
        """sessions(), fetched page by page as the iteration goes."""
        async for item in self._pages("sessions/", session_params(filters)):
            yield _build(Session, item)

    # -- threads

    async def thread(self, session_key: str, *, user_id: str = "", agent: str = "",
                     name: str = "main") -> AsyncThreadHandle:
        """The thread `name` of session (user_id, session_key), created with it as needed."""
        thread = await self._run(self._ensure_thread(session_key, user_id, agent, name))
        return AsyncThreadHandle(self, thread)

    async def get_thread(self, thread_id: int) -> AsyncThreadHandle:
        return AsyncThreadHandle(self, await self._run(self._get_thread(thread_id)))

    async def import_thread(self, data: dict[str, Any], *, session_key: str | None = None,
                            user_id: str | None = None, name: str | None = None) -> AsyncThreadHandle:
        """Create a thread from a contextstore export or a peteos context JSON."""
        return AsyncThreadHandle(self, await self._run(self._import_thread(data, session_key, user_id, name)))


class AsyncThreadHandle(ThreadOps, Awaiting):
    """ThreadHandle, awaited: the same operations with the same rules (retry-safe batches, LLM
    calls naming the last render)."""

    client: AsyncContextStore

    async def _send(self, call: Call) -> Any:
        return await self.client._send(call)

    async def iter_events(self, **filters: Unpack[EventFilters]) -> AsyncIterator[Event]:
        """events(), fetched page by page as the iteration goes."""
        async for item in self.client._pages(self._path + "events/", event_params(filters)):
            yield _event(item)

    async def fork(self, name: str, *, start_position: int | None = None,
                   end_position: int | None = None, system_prompt: str | None = None,
                   widen: bool = False) -> AsyncThreadHandle:
        """See ThreadHandle.fork."""
        return AsyncThreadHandle(self.client, await self._run(self._fork(name, start_position, end_position,
                                                                         system_prompt, widen)))

    @overload
    async def get_recent_history(self, n: int | None = None, raw: Literal[False] = False) -> str: ...
    @overload
    async def get_recent_history(self, n: int | None = None, *, raw: Literal[True]) -> History: ...
    @overload
    async def get_recent_history(self, n: int | None = None, raw: bool = False) -> str | History: ...
    async def get_recent_history(self, n: int | None = None, raw: bool = False) -> str | History:
        """clientai get_recent_history: the formatted text, or the raw interactions."""
        return await self._run(self._recent_history(n, raw))
