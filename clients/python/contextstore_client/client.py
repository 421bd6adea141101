"""The blocking client: ContextStore (a server and a workspace token) and ThreadHandle (one thread).

Every appended event gets a generated `client_id` unless the caller gives one, so a retried
append never duplicates. Transient failures are retried with exponential backoff (honouring
Retry-After): connection failures and 429/503 always (the server did not act on the request),
other 5xx and read timeouts only for requests that are safe to repeat (reads, appends,
upserts, unconditional PUT/PATCH/DELETE; never a write sent with If-Match). API errors
raise a `ContextStoreError` subclass named after the status.

The operations themselves live in _store.py and _threads.py, shared with the asyncio client.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal, overload

import httpx
from tenacity import Retrying

from contextstore_client._http import (
    _checked,
    _http_options,
    _param,
    _retry_policy,
    _Transient,
    _transport_failure,
)
from contextstore_client._ops import Blocking, Call
from contextstore_client._store import SessionFilters, StoreOps, session_params
from contextstore_client._threads import EventFilters, ThreadOps, event_params, local_now
from contextstore_client.results import Event, Session, _build, _event

if TYPE_CHECKING:  # typing.Unpack is 3.11+; only the type checker reads it
    from typing_extensions import Unpack

__all__ = ["ContextStore", "ThreadHandle", "local_now"]


class ContextStore(StoreOps, Blocking):
    """A connection to one contextstore server, authenticated by one workspace API token."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0, retries: int = 4,
                 backoff: float = 0.25, max_backoff: float = 10.0,
                 transport: httpx.BaseTransport | None = None):
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._http = httpx.Client(**_http_options(base_url, token, timeout, transport))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ContextStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
                headers: dict[str, str] | None = None, idempotent: bool | None = None,
                content: bytes | None = None) -> httpx.Response:
        """Send one request, retrying transient failures; raise ContextStoreError on errors.

        `idempotent` says whether repeating the request is harmless (default: everything but
        POST); it decides whether a 5xx or a lost answer is retried.
        """
        if idempotent is None:
            idempotent = method.upper() != "POST"
        if params:
            params = {k: _param(v) for k, v in params.items() if v is not None}

        def attempt() -> httpx.Response:
            try:
                response = self._http.request(method, path, json=json, params=params,
                                              headers=headers, content=content)
            except httpx.TransportError as exc:
                raise _transport_failure(method, path, exc, idempotent) from exc
            return _checked(response, idempotent)

        try:  # the first attempt outside tenacity: most calls need no other (~10 us less a call)
            return attempt()
        except _Transient as exc:
            failures = [exc]
        retrying = Retrying(**_retry_policy(self.retries, self.backoff, self.max_backoff))
        try:
            for tried in retrying:
                with tried:  # tenacity's attempt 1 is the failure above: its waits and stop as before
                    if failures:
                        raise failures.pop()
                    return attempt()
        except _Transient as last:
            raise last.failure from last.failure.__cause__
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _send(self, call: Call) -> Any:
        return call.answer(self.request(call.method, call.path, **call.options))

    def _pages(self, path: str, params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list, one page at a time, following `next` links."""
        page = self._send(Call("GET", path, {"params": params}))
        while True:
            yield from page["results"]
            if not page.get("next"):
                return
            page = self._send(Call("GET", page["next"]))

    def iter_sessions(self, **filters: Unpack[SessionFilters]) -> Iterator[Session]:
        """sessions(), fetched page by page as the iteration goes."""
        for item in self._pages("sessions/", session_params(filters)):
            yield _build(Session, item)

    # -- threads

    def thread(self, session_key: str, *, user_id: str = "", agent: str = "",
               name: str = "main") -> ThreadHandle:
        """The thread `name` of session (user_id, session_key), created with it as needed."""
        return ThreadHandle(self, self._run(self._ensure_thread(session_key, user_id, agent, name)))

    def get_thread(self, thread_id: int) -> ThreadHandle:
        return ThreadHandle(self, self._run(self._get_thread(thread_id)))

    def import_thread(self, data: dict[str, Any], *, session_key: str | None = None,
                      user_id: str | None = None, name: str | None = None) -> ThreadHandle:
        """Create a thread from a contextstore export or a peteos context JSON."""
        return ThreadHandle(self, self._run(self._import_thread(data, session_key, user_id, name)))


class ThreadHandle(ThreadOps, Blocking):
    """One thread: events, collapses, blocks, state, clientai/peteos/AgentScope operations."""

    client: ContextStore

    def _send(self, call: Call) -> Any:
        return self.client._send(call)

    def iter_events(self, **filters: Unpack[EventFilters]) -> Iterator[Event]:
        """events(), fetched page by page as the iteration goes."""
        for item in self.client._pages(self._path + "events/", event_params(filters)):
            yield _event(item)

    def fork(self, name: str, *, start_position: int | None = None,
             end_position: int | None = None, system_prompt: str | None = None,
             widen: bool = False) -> ThreadHandle:
        """peteos fork: a new thread with exactly this thread's working context at positions
        [start_position, end_position] (both included; None = open end), summaries and their
        collapses included. `delete_fork()` on the new handle undoes it. `widen`: as
        collapse's (a range splitting a tool call from its results grows to the exchange)."""
        return ThreadHandle(self.client, self._run(self._fork(name, start_position, end_position,
                                                              system_prompt, widen)))

    @overload
    def get_recent_history(self, n: int | None = None, raw: Literal[False] = False) -> str: ...
    @overload
    def get_recent_history(self, n: int | None = None, *, raw: Literal[True]) -> list[dict[str, Any]]: ...
    @overload
    def get_recent_history(self, n: int | None = None, raw: bool = False) -> str | list[dict[str, Any]]: ...
    def get_recent_history(self, n: int | None = None, raw: bool = False) -> str | list[dict[str, Any]]:
        """clientai get_recent_history: the formatted text, or the raw interactions."""
        return self._run(self._recent_history(n, raw))
