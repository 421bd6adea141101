"""Python client for the contextstore agent API (v1).

Needs httpx and tenacity; importing it never imports Django, so agents can use it anywhere::

    from contextstore.client import ContextStore

    with ContextStore("https://contextstore.example", token="cs_...") as cs:
        thread = cs.thread("conversation-42", user_id="ann", agent="helper")
        thread.append([{"type": "Message", "role": "user", "content": "Hi"}])
        prompt = thread.context(max_tokens=8000).messages
        state = thread.state()
        thread.patch_state({"plan": ["research"]}, if_match=state.revision)

Every appended event gets a generated `client_id` unless the caller gives one, so a retried
append never duplicates. Transient failures are retried with exponential backoff (honouring
Retry-After): connection failures and 429/503 always (the server did not act on the request),
other 5xx and read timeouts only for requests that are safe to repeat (reads, appends,
upserts, unconditional PUT/PATCH/DELETE; never a write sent with If-Match). API errors
raise a `ContextStoreError` subclass named after the status.
"""

from __future__ import annotations

import base64
import hashlib
import json as json_module
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, overload
from urllib.parse import quote

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "AsyncContextStore", "AppendedEvent", "Block", "Collapse", "ConnectionFailed", "Context", "ContextStore",
    "ContextStoreError", "Conflict", "Event", "Forbidden", "InvalidInput", "Job", "Memory",
    "NotFound", "PayloadTooLarge", "ProviderState", "Run", "ServerError", "Session",
    "StaleRevision", "State", "StateRevision", "SyncItem", "SyncLoad", "SyncTracker", "Thread",
    "ThreadHandle", "Throttled", "Unauthorized", "Window", "item_digest", "local_now",
]


# ------------------------------------------------------------------------------- errors

class ContextStoreError(Exception):
    """An error answer from the API: `status`, `code`, `message`, `details`."""

    status: int = 0

    def __init__(self, message: str, *, status: int = 0, code: str = "error",
                 details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.status = status or self.status
        self.code = code
        self.details = details or {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status}, {self.code!r}, {self.message!r})"


class InvalidInput(ContextStoreError):
    status = 400


class Unauthorized(ContextStoreError):
    status = 401


class Forbidden(ContextStoreError):
    status = 403


class NotFound(ContextStoreError):
    status = 404


class Conflict(ContextStoreError):
    status = 409


class StaleRevision(ContextStoreError):
    """The state changed since the revision you based your write on: read it again."""

    status = 412


class PayloadTooLarge(ContextStoreError):
    status = 413


class Throttled(ContextStoreError):
    status = 429


class ServerError(ContextStoreError):
    status = 500


class ConnectionFailed(ContextStoreError):
    """The server could not be reached (after retries)."""


ERRORS: dict[int, type[ContextStoreError]] = {
    400: InvalidInput, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
    412: StaleRevision, 413: PayloadTooLarge, 429: Throttled,
}
# Events that log a model call; they may carry the render_id of the context that was sent.
LLM_CALL_TYPES = ("LLMCallStart", "LLMComplete", "LLMCallEnd")


# ------------------------------------------------------------------------------- results

def _build[T: DataclassInstance](cls: type[T], data: dict[str, Any], **extra: Any) -> T:
    """A result dataclass from a JSON object; fields the client does not know are ignored so
    newer servers stay compatible."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names}, **extra)


@dataclass
class Session:
    id: int
    key: str
    user_id: str = ""
    agent: str = ""
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    archived: bool = False
    created_at: str | None = None
    updated_at: str | None = None
    last_activity_at: str | None = None
    thread_count: int = 0
    event_count: int = 0
    error_count: int = 0
    token_total: int = 0
    cost_total: float = 0.0
    created: bool = False  # set by upsert_session: True when this call created it


@dataclass
class Thread:
    id: int
    session: int
    session_key: str
    name: str
    user_id: str = ""
    parent: int | None = None
    fork_start_position: int | None = None  # inclusive
    fork_end_position: int | None = None  # inclusive
    revision: int = 0
    iteration: int = 0
    max_history_size: int = 10
    summary: str = ""
    summarizer: dict[str, Any] | None = None
    system_prompt: str = ""
    last_seq: int = 0
    event_count: int = 0
    token_total: int = 0
    active_event_count: int = 0
    active_tokens: int = 0
    last_event_at: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


@dataclass
class Event:
    id: int
    seq: int
    type: str
    position: int = 0
    role: str = ""
    content: str = ""
    parts: list[Any] | None = None
    data: Any = None
    run_id: str | None = None
    call_id: str = ""
    step: str = ""
    anchor: str = ""
    client_id: str | None = None
    token_count: int = 0
    visible: bool = True
    status: str = "active"
    collapse: int | None = None
    occurred_at: str | None = None
    created_at: str | None = None


@dataclass
class AppendedEvent:
    seq: int
    id: int
    token_count: int
    client_id: str | None


@dataclass
class Collapse:
    id: int
    thread: int
    start_position: int  # working-context positions, both ends inclusive
    end_position: int
    summary_event: Event
    source: str = ""
    actor: str = ""
    event_count: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    provenance: dict[str, Any] = field(default_factory=dict)
    job: str | None = None
    created_at: str | None = None
    undone_at: str | None = None


@dataclass
class Clear:
    """One clear-context: how many events it took out and the summary it emptied."""

    id: int
    thread: int
    actor: str = ""
    summary: str = ""
    event_count: int = 0
    tokens: int = 0
    created_at: str | None = None
    undone_at: str | None = None


@dataclass
class Block:
    name: str
    value: str | None = None
    expr: str | None = None
    placement: str = "suffix"
    order: int = 0
    version: int = 1
    token_count: int = 0
    created_at: str | None = None
    updated_at: str | None = None


@dataclass
class State:
    state: dict[str, Any]
    memory: list[dict[str, Any]]
    revision: int
    iteration: int = 0
    current_input: Any = None
    original_input: Any = None
    max_history_size: int = 10
    summary: str = ""
    last_results: dict[str, Any] = field(default_factory=dict)  # clientai step results


@dataclass
class StateRevision:
    revision: int
    state: dict[str, Any]
    memory: list[dict[str, Any]]
    reason: str = ""
    actor: str = ""
    created_at: str | None = None


@dataclass
class Context:
    """A render. `messages` (and `system` for format="anthropic") go to the model as they are;
    `render_id` names its render record (log it with the call: ThreadHandle.log_llm_call)."""

    messages: list[dict[str, Any]]
    stats: dict[str, Any]
    format: str = "raw"
    system: list[dict[str, Any]] | None = None
    render_id: str | None = None


@dataclass
class Window:
    events: list[Event]
    covers_all: bool


@dataclass
class Run:
    id: int
    run_id: str
    thread: int
    status: str
    input: Any = None
    step_results: dict[str, Any] = field(default_factory=dict)
    iteration: int = 0
    error: str = ""
    started_at: str | None = None
    ended_at: str | None = None
    duration_ms: int | None = None
    event_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


@dataclass
class ProviderState:
    name: str
    state: Any
    version: int = 1
    updated_at: str | None = None


@dataclass
class Memory:
    id: int
    content: str
    user_id: str = ""
    key: str | None = None
    data: Any = None
    source_event: int | None = None
    created_at: str | None = None
    updated_at: str | None = None
    created: bool = False


@dataclass
class Job:
    id: str
    kind: str
    status: str
    thread: int
    params: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    error: str = ""
    created_at: str | None = None
    started_at: str | None = None
    finished_at: str | None = None


def _event(data: dict[str, Any]) -> Event:
    return _build(Event, data)


def _collapse(data: dict[str, Any]) -> Collapse:
    return _build(Collapse, {**data, "summary_event": _event(data["summary_event"])})


def _state(data: dict[str, Any]) -> State:
    return _build(State, data)


# ----------------------------------------------------------------- framework sessions

_RAISE: Any = object()


def _blob_out(blobs: Any) -> list[dict[str, Any]]:
    """Blobs to send: {key: bytes} or {key: (bytes, meta)} or a list of dicts with bytes."""
    if isinstance(blobs, dict):
        blobs = [{"key": k, "data": v[0], "meta": v[1]} if isinstance(v, tuple) else {"key": k, "data": v}
                 for k, v in blobs.items()]
    return [{**b, "data": base64.b64encode(bytes(b["data"])).decode()} for b in blobs]


def _blobs_in(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {b["key"]: {**b, "data": base64.b64decode(b["data"])} for b in rows}


def _read_in(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "blobs": _blobs_in(body.get("blobs") or [])}


class _AgentSessions:
    """Framework sessions (/agent-sessions/), addressed by (app, user_id, key, thread): every
    call is one request. Shared by ContextStore and AsyncContextStore: `_call` returns the
    value for the first and an awaitable of it for the second (which overrides
    it). Answers are plain dicts in the
    API's shapes; blob bytes are decoded."""

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        raise NotImplementedError

    def _call(self, method: str, path: str, *, parse: Any = None, missing: Any = _RAISE,
              **kwargs: Any) -> Any:
        try:
            body = self._json(method, path, **kwargs)
        except NotFound:
            if missing is _RAISE:
                raise
            return missing
        return parse(body) if parse else body

    def create_agent_session(
        self, app: str, user_id: str, key: str, *, thread: str = "main", state: dict[str, Any] | None = None,
        app_state: dict[str, Any] | None = None, user_state: dict[str, Any] | None = None, agent: str = "",
        title: str = "", metadata: dict[str, Any] | None = None,
    ) -> Any:
        """Create-only (Conflict if it exists): session, first thread, initial state and scopes."""
        return self._call("POST", "agent-sessions/", parse=_read_in, idempotent=False, json={
            "app": app, "user_id": user_id, "key": key, "thread": thread, "state": state,
            "app_state": app_state, "user_state": user_state, "agent": agent, "title": title,
            "metadata": metadata})

    def read_agent_session(
        self, app: str, user_id: str, key: str, *, thread: str = "main", limit: int | None = None,
        after: str | None = None, types: list[str] | None = None, client_id: str | None = None,
        data_contains: dict[str, Any] | None = None, blobs: list[str] | None = None,
        before_client_id: str | None = None,
    ) -> Any:
        """One request: session, state, scopes, newest `limit` events, named blobs; None if missing."""
        params: dict[str, Any] = {"app": app, "user_id": user_id, "key": key, "thread": thread,
                                  "limit": limit, "after": after, "client_id": client_id,
                                  "before_client_id": before_client_id,
                                  "type": types or None, "blob": blobs or None}
        if data_contains is not None:
            params["data_contains"] = json_module.dumps(data_contains)
        return self._call("GET", "agent-sessions/read/", params=params, parse=_read_in, missing=None)

    def commit_agent_session(
        self, app: str, user_id: str, key: str, *, thread: str = "main",
        events: list[dict[str, Any]] | None = None, state: dict[str, Any] | None = None,
        app_state: dict[str, Any] | None = None, user_state: dict[str, Any] | None = None, blobs: Any = None,
        if_match: int | None = None, expected_last_seq: int | None = None,
        batch_id: str | None = None, create: bool = False,
    ) -> Any:
        """The atomic conditional append. Always sent with a batch id, so a retry after a lost
        answer returns the first answer instead of applying twice (hence safe to retry)."""
        body = {"app": app, "user_id": user_id, "key": key, "thread": thread, "create": create,
                "events": [{"client_id": uuid.uuid4().hex, **e} for e in events or []],
                "state": state, "app_state": app_state, "user_state": user_state,
                "blobs": _blob_out(blobs or []), "expected_last_seq": expected_last_seq,
                "batch_id": batch_id or uuid.uuid4().hex}
        headers = {"If-Match": f'"{if_match}"'} if if_match is not None else None
        return self._call("POST", "agent-sessions/commit/", json=body, headers=headers, idempotent=True)

    def retract_agent_event(self, app: str, user_id: str, key: str, *, thread: str = "main") -> Any:
        """Retract the newest event and return it (None when there is none). Not retried."""
        return self._call("POST", "agent-sessions/retract/", idempotent=False,
                          json={"app": app, "user_id": user_id, "key": key, "thread": thread},
                          parse=lambda body: body["event"])

    def clear_agent_session(self, app: str, user_id: str, key: str, *, thread: str = "main") -> Any:
        return self._call("POST", "agent-sessions/clear/", idempotent=True,
                          json={"app": app, "user_id": user_id, "key": key, "thread": thread},
                          parse=lambda body: body["cleared"])

    def delete_agent_session(self, app: str, user_id: str = "", key: str | None = None, *,
                             key_prefix: str | None = None) -> Any:
        """Delete one session, or every session of the app whose key starts with key_prefix."""
        body: dict[str, str | None] = {"app": app, "user_id": user_id}
        body.update({"key": key} if key is not None else {"key_prefix": key_prefix})
        return self._call("POST", "agent-sessions/delete/", json=body, idempotent=True,
                          parse=lambda answer: answer["deleted"])

    def copy_agent_session(self, app: str, user_id: str, key: str, target_key: str) -> Any:
        """Copy a session (every thread's history, state and blobs) to a new key; returns the
        number of events copied. NotFound without the source, Conflict if the target exists."""
        return self._call("POST", "agent-sessions/copy/", idempotent=False, json={
            "app": app, "user_id": user_id, "key": key, "target_key": target_key},
            parse=lambda answer: answer["copied"])

    def remove_agent_events(self, app: str, user_id: str = "", *, keys: list[str] | None = None,
                            run_ids: list[str] | None = None, types: list[str] | None = None,
                            keep_latest: bool = False, blob_prefixes: list[str] | None = None) -> Any:
        """Take events out of the history (kept for audit) of the sessions `keys`, or of the
        runs `run_ids` in every session of the app, with the blobs `blob_prefixes` name
        ("w/{client_id}/"); returns how many left."""
        body: dict[str, Any] = {"app": app, "user_id": user_id, "keep_latest": keep_latest,
                                "blob_prefixes": blob_prefixes or []}
        body.update({"keys": keys} if keys is not None else {"run_ids": run_ids})
        if types:
            body["type"] = types
        return self._call("POST", "agent-sessions/remove/", json=body, idempotent=True,
                          parse=lambda answer: answer["removed"])

    def list_agent_sessions(self, app: str, *, user_id: str | None = None, thread: str = "main",
                            cursor: str | None = None, limit: int = 50) -> Any:
        """One page {results: [session with state], next_cursor}, newest activity first."""
        return self._call("GET", "agent-sessions/", params={
            "app": app, "user_id": user_id, "thread": thread, "cursor": cursor, "limit": limit})

    def agent_blobs(self, app: str, user_id: str, key: str, keys: list[str], *,
                    prefixes: list[str] | None = None, thread: str = "main") -> Any:
        """Several blobs at once (by key or key prefix): {key: {data: bytes, meta, content_type,
        size}}; {} when the session or thread does not exist."""
        return self._call("GET", "agent-sessions/blobs/", parse=_blobs_in, missing={}, params={
            "app": app, "user_id": user_id, "key": key, "thread": thread, "blob": keys or None,
            "prefix": prefixes or None})

    def scoped_states(self, app: str, user_id: str = "") -> Any:
        return self._call("GET", "agent-sessions/scopes/", params={"app": app, "user_id": user_id})

    def patch_scoped_state(self, app: str, scope: str, patch: dict[str, Any], *, user_id: str = "") -> Any:
        return self._call("PATCH", "agent-sessions/scopes/", idempotent=False, json={
            "app": app, "scope": scope, "user_id": user_id, "patch": patch})


@dataclass
class SyncItem:
    """One item of a loaded working context: `key` names it in every later save."""

    key: str
    own: bool  # False: added by a person, a worker or another framework
    digest: str
    event: Event


@dataclass
class SyncLoad:
    revision: int
    state: dict[str, Any]
    summary: str
    document: Any
    items: list[SyncItem]
    rendered: Any = None  # the same moment in a framework's own format (format="peteos")


def item_digest(event: dict[str, Any]) -> str:
    """The digest the server keeps for a synced item (services/sync.py computes the same)."""
    payload = {k: v for k, v in event.items() if k not in ("occurred_at", "run_id", "client_id")}
    return hashlib.sha256(json_module.dumps(
        payload, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


UNSET_TIME: Any = "local"  # set_input's default: this process's local time


def local_now() -> str:
    """The agent's local time with its UTC offset, as the server stores it for the framework."""
    return datetime.now().astimezone().isoformat()


# ------------------------------------------------------------------------------- client

RETRY_ALWAYS = {429, 503}
RETRY_IF_IDEMPOTENT = {500, 502, 504}


class _Transient(Exception):
    """One failed attempt that may be retried; `failure` is what the caller gets if it was the
    last one allowed."""

    def __init__(self, failure: ContextStoreError, retry_after: float | None = None):
        super().__init__(str(failure))
        self.failure = failure
        self.retry_after = retry_after


def _transport_failure(method: str, path: str, exc: httpx.TransportError,
                       idempotent: bool) -> Exception:
    """A request that got no answer. One that never reached the server (connect, pool) is
    always safe to send again; a lost answer (read timeout, reset) only when repeating is."""
    failure = ConnectionFailed(f"{method} {path}: {exc}")
    failure.__cause__ = exc
    never_sent = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))
    return _Transient(failure) if never_sent or idempotent else failure


def _checked(response: httpx.Response, idempotent: bool) -> httpx.Response:
    """The response, or its error: _Transient when the status says trying again may work
    (429/503 always, the server did not act; other 5xx only when repeating is harmless)."""
    status = response.status_code
    if status < 400:
        return response
    error = _error(response)
    if status in RETRY_ALWAYS or (idempotent and status in RETRY_IF_IDEMPOTENT):
        raise _Transient(error, _retry_after(response))
    raise error


def _retry_policy(retries: int, backoff: float, max_backoff: float) -> dict[str, Any]:
    """tenacity settings shared by the sync and async clients: at most `retries` retries of a
    _Transient failure, exponential backoff with jitter, never shorter than the server's
    Retry-After, never longer than 60 s."""

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        retry_after = exc.retry_after if isinstance(exc, _Transient) else None
        delay = min(backoff * (2.0 ** (state.attempt_number - 1)), max_backoff) * (0.5 + random.random())
        return min(max(delay, retry_after or 0.0), 60.0)

    return {"stop": stop_after_attempt(retries + 1), "retry": retry_if_exception_type(_Transient),
            "wait": wait, "reraise": True}


def _http_options(base_url: str, token: str, timeout: float, transport: Any) -> dict[str, Any]:
    """What the sync and the async client both give httpx: the API root, auth and timeout."""
    return {"base_url": base_url.rstrip("/") + "/api/v1/", "timeout": timeout, "transport": transport,
            "headers": {"Authorization": f"Bearer {token}", "Accept": "application/json",
                        "User-Agent": "contextstore-client/1"}}


class ContextStore(_AgentSessions):
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

    # -- transport

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
        retrying = Retrying(**_retry_policy(self.retries, self.backoff, self.max_backoff))
        try:
            for attempt in retrying:
                with attempt:
                    try:
                        response = self._http.request(method, path, json=json, params=params,
                                                      headers=headers, content=content)
                    except httpx.TransportError as exc:
                        raise _transport_failure(method, path, exc, idempotent) from exc
                    return _checked(response, idempotent)
        except _Transient as last:
            raise last.failure from last.failure.__cause__
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.request(method, path, **kwargs)
        return response.json() if response.content else None

    def _pages(self, path: str, params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list, following `next` links."""
        page = self._json("GET", path, params=params)
        while True:
            yield from page["results"]
            if not page.get("next"):
                return
            page = self._json("GET", page["next"])

    # -- sessions

    def upsert_session(self, key: str, *, user_id: str = "", agent: str = "", title: str = "",
                       metadata: dict[str, Any] | None = None) -> Session:
        """Create the session (user_id, key) or return the existing one (`.created` tells)."""
        response = self.request("POST", "sessions/", idempotent=True, json={
            "key": key, "user_id": user_id, "agent": agent, "title": title, "metadata": metadata})
        return _build(Session, response.json(), created=response.status_code == 201)

    def iter_sessions(self, *, user_id: str | None = None, agent: str | None = None,
                      q: str | None = None, archived: bool | None = None) -> Iterator[Session]:
        params = {"user_id": user_id, "agent": agent, "q": q, "archived": archived}
        for item in self._pages("sessions/", {k: v for k, v in params.items() if v is not None}):
            yield _build(Session, item)

    def sessions(self, **filters: Any) -> list[Session]:
        """All sessions matching user_id / agent / q / archived, oldest first."""
        return list(self.iter_sessions(**filters))

    def session(self, session_id: int) -> Session:
        return _build(Session, self._json("GET", f"sessions/{session_id}/"))

    def update_session(self, session_id: int, **changes: Any) -> Session:
        """Change title, agent, metadata or archived."""
        return _build(Session, self._json("PATCH", f"sessions/{session_id}/", json=changes))

    def delete_session(self, session_id: int) -> None:
        """Delete a session with all its threads and history (not undoable)."""
        self.request("DELETE", f"sessions/{session_id}/")

    def session_threads(self, session_id: int) -> list[Thread]:
        return [_build(Thread, t) for t in self._pages(f"sessions/{session_id}/threads/")]

    # -- threads

    def thread(self, session_key: str, *, user_id: str = "", agent: str = "",
               name: str = "main") -> ThreadHandle:
        """The thread `name` of session (user_id, session_key), created with it as needed."""
        data = self._json("POST", "threads/ensure/", idempotent=True, json={
            "session_key": session_key, "user_id": user_id, "agent": agent, "name": name})
        return ThreadHandle(self, _build(Thread, data))

    def get_thread(self, thread_id: int) -> ThreadHandle:
        return ThreadHandle(self, _build(Thread, self._json("GET", f"threads/{thread_id}/")))

    def import_thread(self, data: dict[str, Any], *, session_key: str | None = None,
                      user_id: str | None = None, name: str | None = None) -> ThreadHandle:
        """Create a thread from a contextstore export or a peteos context JSON."""
        created = self._json("POST", "threads/import/", json=data, params={
            "session_key": session_key, "user_id": user_id, "name": name})
        return ThreadHandle(self, _build(Thread, created))

    def undo_collapse(self, collapse_id: int) -> Collapse:
        """Bring a collapse's events back (one nesting level at a time)."""
        return _collapse(self._json("POST", f"collapses/{collapse_id}/undo/"))

    # -- runs, memories, jobs

    def run(self, run_pk: int) -> Run:
        return _build(Run, self._json("GET", f"runs/{run_pk}/"))

    def complete_run(self, run_pk: int) -> Run:
        return _build(Run, self._json("POST", f"runs/{run_pk}/complete/", json={}, idempotent=True))

    def fail_run(self, run_pk: int, error: str = "") -> Run:
        return _build(Run, self._json("POST", f"runs/{run_pk}/fail/", json={"error": error},
                                      idempotent=True))

    def interrupt_run(self, run_pk: int) -> Run:
        return _build(Run, self._json("POST", f"runs/{run_pk}/interrupt/", json={},
                                      idempotent=True))

    def remember(self, content: str, *, user_id: str = "", key: str | None = None,
                 data: Any = None) -> Memory:
        """Store a long-term fact about an end user; with a key it replaces the previous one."""
        response = self.request("POST", "memories/", idempotent=key is not None, json={
            "user_id": user_id, "key": key, "content": content, "data": data})
        return _build(Memory, response.json(), created=response.status_code == 201)

    def recall(self, *, user_id: str | None = None, q: str | None = None,
               limit: int = 20) -> list[Memory]:
        """Memories (newest first) of a user, optionally matching any word of `q`."""
        data = self._json("GET", "memories/", params={"user_id": user_id, "q": q, "limit": limit})
        return [_build(Memory, m) for m in data["results"]]

    def job(self, job_id: str) -> Job:
        return _build(Job, self._json("GET", f"jobs/{job_id}/"))

    def render(self, render_id: str) -> Context:
        """A recorded render rebuilt: exactly the messages that call was given."""
        return _rebuilt(self._json("GET", f"renders/{render_id}/"))

    def render_diff(self, a: str, b: str) -> dict[str, Any]:
        """What changed between two recorded renders (events, blocks, summary, prefix, tokens)."""
        diff: dict[str, Any] = self._json("GET", f"renders/{a}/diff/{b}/")
        return diff


class _Handle:
    """What the sync and async thread handles share: the thread, its path, the last render."""

    def __init__(self, client: Any, thread: Thread):
        self.client = client
        self.thread = thread
        self.id = thread.id
        self._path = f"threads/{thread.id}/"
        # The render the agent fetched last; LLM-call events logged after it carry its id.
        self.last_render_id: str | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id} {self.thread.session_key}/{self.thread.name}>"

    def _rendered(self, data: dict[str, Any]) -> Context:
        self.last_render_id = data.get("render_id")
        return _context(data)


class ThreadHandle(_Handle):
    """One thread: events, collapses, blocks, state, clientai/peteos/AgentScope operations."""

    client: ContextStore

    def _json(self, method: str, sub: str = "", **kwargs: Any) -> Any:
        return self.client._json(method, self._path + sub, **kwargs)

    def refresh(self) -> Thread:
        """Re-read the thread's counters and settings."""
        self.thread = _build(Thread, self._json("GET"))
        return self.thread

    # -- events

    def append(self, events: list[dict[str, Any]]) -> list[AppendedEvent]:
        """Append a batch (one transaction). Events without a client_id get a fresh one, so the
        batch can be retried safely; returns seq, id, token_count and client_id of each."""
        data = self._json("POST", "events/", json=_batch(events, self.last_render_id), idempotent=True)
        return [_build(AppendedEvent, e) for e in data["events"]]

    def log_llm_call(self, model: str, *, messages: list[dict[str, Any]] | None = None,
                     input_tokens: int | None = None, output_tokens: int | None = None,
                     cost: float | None = None, run_id: str | None = None,
                     **data: Any) -> list[AppendedEvent]:
        """Log one model call: LLMCallStart (with the last context()'s render_id, or the exact
        `messages` you sent when you built the prompt yourself) and LLMComplete with usage."""
        usage = {"input_tokens": input_tokens, "output_tokens": output_tokens, "cost": cost}
        return self.append(_llm_call_events(model, messages, usage, run_id, data))

    def append_one(self, type: str, content: str = "", **fields: Any) -> AppendedEvent:
        """Append a single event: `append_one("Message", "hi", role="user")`."""
        return self.append([{"type": type, "content": content, **fields}])[0]

    def iter_events(self, *, type: str | list[str] | None = None, q: str | None = None,
                    regex: str | None = None, run_id: str | None = None,
                    call_id: str | None = None, step: str | None = None,
                    after_seq: int | None = None, before_seq: int | None = None,
                    status: str | None = None, visible: bool | None = None,
                    limit: int | None = None, page_size: int | None = None) -> Iterator[Event]:
        """Events matching all filters, oldest first; `limit` keeps only the newest matches.

        type: a list of whole names (commas allowed in a name), or a comma-separated str."""
        if isinstance(type, list) and len(type) == 1 and "," in type[0]:
            type = type * 2  # a single value is read as a comma-separated list: repeat it
        params = {"type": type, "q": q,
                  "regex": regex, "run_id": run_id, "call_id": call_id, "step": step,
                  "after_seq": after_seq, "before_seq": before_seq, "status": status,
                  "visible": visible, "limit": limit, "page_size": page_size}
        for item in self.client._pages(self._path + "events/",
                                       {k: v for k, v in params.items() if v is not None}):
            yield _event(item)

    def events(self, **filters: Any) -> list[Event]:
        """All matching events as a list (see iter_events for the filters)."""
        return list(self.iter_events(**filters))

    # -- collapses and summaries

    def collapse(self, start_position: int, end_position: int, summary_text: str) -> Collapse:
        """Replace the working context at positions [start_position, end_position] (both
        included) with a summary. An ordinary event's position is its seq."""
        return _collapse(self._json("POST", "collapse/", json={
            "start_position": start_position, "end_position": end_position,
            "summary_text": summary_text}))

    def summarize(self, start_position: int, end_position: int) -> str:
        """Queue a worker to summarize and collapse the range (inclusive); returns the job id."""
        job_id: str = self._json("POST", "collapse/", json={
            "start_position": start_position, "end_position": end_position,
            "summarize": True})["job_id"]
        return job_id

    def configure_summarizer(self, config: dict[str, Any] | None) -> Thread:
        """Set the automatic summarizer (e.g. {"token_budget": {"max_tokens": 8000}}); None
        removes the thread's setting, {} switches summarization off even under a default."""
        # An explicit JSON null (httpx sends no body for json=None): null removes the setting.
        body = json_module.dumps(config).encode()
        self.thread = _build(Thread, self._json("PUT", "summarizer/", content=body,
                                                headers={"Content-Type": "application/json"}))
        return self.thread

    # -- blocks

    def blocks(self) -> list[Block]:
        return [_build(Block, b) for b in self._json("GET", "blocks/")["results"]]

    def put_block(self, name: str, *, value: str | None = None, expr: str | None = None,
                  placement: str | None = None, order: int | None = None) -> Block:
        """Set a block's fixed value or live expr (value=None and no expr suppresses it)."""
        body: dict[str, Any] = {"expr": expr} if expr is not None else {"value": value}
        if placement is not None:
            body["placement"] = placement
        if order is not None:
            body["order"] = order
        return _build(Block, self._json("PUT", f"blocks/{_segment(name)}/", json=body))

    def delete_block(self, name: str) -> None:
        self._json("DELETE", f"blocks/{_segment(name)}/")

    # -- state

    def state(self) -> State:
        return _state(self._json("GET", "state/"))

    def _write_state(self, method: str, state: Any, memory: Any, reason: str,
                     if_match: int | None, summary: str | None = None) -> State:
        body: dict[str, Any] = {"reason": reason}
        if state is not None:
            body["state"] = state
        if memory is not None:
            body["memory"] = memory
        if summary is not None:
            body["summary"] = summary
        headers = {"If-Match": f'"{if_match}"'} if if_match is not None else None
        # A conditional write that may have landed must not be resent: the retry would meet
        # its own new revision and report a false StaleRevision. The caller re-reads instead.
        return _state(self._json(method, "state/", json=body, headers=headers,
                                 idempotent=if_match is None))

    def put_state(self, state: dict[str, Any] | None = None, *, memory: list[dict[str, Any]] | None = None,
                  summary: str | None = None, reason: str = "",
                  if_match: int | None = None) -> State:
        """Replace state, memory and/or summary. With if_match (a revision), a stale write
        raises StaleRevision and changes nothing; without, last write wins."""
        return self._write_state("PUT", state, memory, reason, if_match, summary)

    def patch_state(self, patch: dict[str, Any] | None = None, *, memory: list[dict[str, Any]] | None = None,
                    summary: str | None = None, reason: str = "",
                    if_match: int | None = None) -> State:
        """Apply a JSON merge patch (RFC 7386: null removes a key) to the state."""
        return self._write_state("PATCH", patch, memory, reason, if_match, summary)

    def revisions(self) -> list[StateRevision]:
        return [_build(StateRevision, r) for r in self.client._pages(self._path + "state/revisions/")]

    def revision(self, revision: int) -> dict[str, Any]:
        """One revision: {"document": the whole document then, "diff": RFC 6902 operations
        from the previous revision, "changed": the fields they touch, reason, actor, ...}."""
        found: dict[str, Any] = self._json("GET", f"state/revisions/{revision}/")
        return found

    def restore(self, revision: int, *, if_match: int | None = None) -> State:
        """Bring back an earlier revision's whole document (state, memory, summary, clientai
        fields, system prompt, tools, framework namespaces), as a new revision."""
        headers = {"If-Match": f'"{if_match}"'} if if_match is not None else None
        return _state(self._json("POST", f"state/revisions/{revision}/restore/", headers=headers))

    # -- clientai AgentContext

    def set_input(self, input_data: Any, *, timestamp: str | None = UNSET_TIME) -> State:
        """clientai set_input: moves the previous interaction to history, stamped with
        `timestamp` (default: this process's local time with its offset; None: the server's)."""
        body: dict[str, Any] = {"input": input_data}
        if timestamp is not None:
            body["timestamp"] = local_now() if timestamp is UNSET_TIME else timestamp
        return _state(self._json("POST", "input/", json=body))

    def set_step_result(self, step: str, result: Any) -> Any:
        return self._json("POST", "results/", json={"step": step, "result": result})["result"]

    def get_step_result(self, step: str) -> Any:
        """The current result of a step, or None when there is none (like clientai)."""
        if not step:  # no path segment for the empty name: read it from the state
            return self.state().last_results.get(step)
        try:
            return self._json("GET", f"results/{_segment(step)}/")["result"]
        except NotFound:
            return None

    def increment_iteration(self) -> int:
        iteration: int = self._json("POST", "iteration/")["iteration"]
        return iteration

    def set_max_history_size(self, size: int) -> State:
        return _state(self._json("PUT", "max-history-size/", json={"size": size}))

    @overload
    def get_recent_history(self, n: int | None = None, raw: Literal[False] = False) -> str: ...
    @overload
    def get_recent_history(self, n: int | None = None, *, raw: Literal[True]) -> list[dict[str, Any]]: ...
    @overload
    def get_recent_history(self, n: int | None = None, raw: bool = False) -> str | list[dict[str, Any]]: ...
    def get_recent_history(self, n: int | None = None, raw: bool = False) -> str | list[dict[str, Any]]:
        """clientai get_recent_history: the formatted text, or the raw interactions."""
        data = self._json("GET", "history/", params={"n": n, "raw": raw})
        history: str | list[dict[str, Any]] = data if raw else data["text"]
        return history

    def reset(self) -> State:
        """clientai clear(): state, memory, results, inputs, iteration; history stays."""
        return _state(self._json("POST", "reset/"))

    def reset_all(self) -> State:
        """clientai clear_all(): clear() and the conversation history."""
        return _state(self._json("POST", "reset-all/"))

    def clear_context(self) -> int:
        """AgentScope clearContext: events and summary leave the working context; state stays.
        Returns how many events were cleared; `unclear()` takes it back."""
        cleared: int = self._json("POST", "clear-context/")["cleared"]
        return cleared

    def clears(self) -> list[Clear]:
        """Every clear-context of this thread, oldest first (undone ones too)."""
        return [_build(Clear, c) for c in self.client._pages(self._path + "clears/")]

    def unclear(self, clear_id: int | None = None) -> Clear:
        """Undo a clear-context (by default the newest one not undone yet): its events come back
        into the working context and its summary with them (unless a newer one was written)."""
        if clear_id is None:
            pending = [c for c in self.clears() if c.undone_at is None]
            if not pending:
                raise NotFound("This thread has no clear to undo.")
            clear_id = pending[-1].id
        data = self._json("POST", f"clears/{clear_id}/undo/")
        return _build(Clear, data["clear"])

    # -- render, windows, peteos

    def context(self, *, max_tokens: int | None = None, strip_thinking: bool = False,
                format: str = "raw", on_oversize: str = "skip", record: bool = True) -> Context:
        """The model context: prefix blocks, summary, newest events that fit, suffix blocks.

        format: "raw", "openai" (Chat Completions messages) or "anthropic" (`system` plus
        Messages API turns). max_tokens defaults to the thread's model budget. By default the
        render is recorded and later LLM-call events carry its render_id; a read-only token
        gets the render unrecorded.
        """
        params = {"max_tokens": max_tokens, "strip_thinking": strip_thinking, "format": format,
                  "on_oversize": on_oversize, "record": record}
        try:
            data = self._json("GET", "context/", params=params)
        except Forbidden:
            if not record:
                raise
            data = self._json("GET", "context/", params={**params, "record": False})
        return self._rendered(data)

    def llm_call(self, seq: int) -> dict[str, Any]:
        """What the LLM call logged at `seq` was sent: its render rebuilt, or its logged messages."""
        sent: dict[str, Any] = self._json("GET", f"llm-calls/{seq}/")
        return sent

    def model_settings(self) -> dict[str, Any]:
        """model, context_window, reserve_output as set here, and `effective` after inheritance."""
        model: dict[str, Any] = self._json("GET", "model/")
        return model

    def set_model(self, **settings: Any) -> dict[str, Any]:
        """Set model, context_window and/or reserve_output (None inherits)."""
        model: dict[str, Any] = self._json("PATCH", "model/", json=settings)
        return model

    def block_versions(self, name: str) -> list[dict[str, Any]]:
        versions: list[dict[str, Any]] = self._json("GET", f"blocks/{name}/versions/")["results"]
        return versions

    def restore_block(self, name: str, version: int) -> Block:
        """Make an earlier kept version the block's content again (undoes an edit or delete)."""
        return _build(Block, self._json("POST", f"blocks/{name}/versions/{version}/restore/"))

    def window(self, *, count: int | None = None, max_tokens: int | None = None) -> Window:
        """peteos rolling window: the last `count` events, or those within `max_tokens`."""
        data = self._json("GET", "window/", params={"count": count, "max_tokens": max_tokens})
        return Window(events=[_event(e) for e in data["events"]], covers_all=data["covers_all"])

    def fork(self, name: str, *, start_position: int | None = None,
             end_position: int | None = None, system_prompt: str | None = None) -> ThreadHandle:
        """peteos fork: a new thread with exactly this thread's working context at positions
        [start_position, end_position] (both included; None = open end), summaries and their
        collapses included. `delete_fork()` on the new handle undoes it."""
        data = self._json("POST", "fork/", json={
            "name": name, "start_position": start_position, "end_position": end_position,
            "system_prompt": system_prompt})
        return ThreadHandle(self.client, _build(Thread, data))

    def delete_fork(self) -> None:
        """Delete this thread, which must be a fork; the parent keeps every original. What the
        fork added after forking is deleted with it (not undoable)."""
        self._json("DELETE")

    def total_tokens(self) -> int:
        total: int = self._json("GET", "tokens/")["total_tokens"]
        return total

    def export(self, format: str = "contextstore") -> dict[str, Any]:
        """The whole thread as contextstore JSON, or its working context as peteos JSON."""
        exported: dict[str, Any] = self._json("GET", "export/", params={"format": format})
        return exported

    # -- runs and providers

    def runs(self) -> list[Run]:
        return [_build(Run, r) for r in self.client._pages(self._path + "runs/")]

    def provider_state(self, name: str) -> ProviderState | None:
        """A context provider's serialized state on this thread, or None if never saved."""
        try:
            return _build(ProviderState, self._json("GET", f"providers/{_segment(name)}/"))
        except NotFound:
            return None

    def put_provider_state(self, name: str, state: Any) -> ProviderState:
        return _build(ProviderState, self._json("PUT", f"providers/{_segment(name)}/", json={"state": state}))

    # -- the sync protocol (framework adapters)

    def sync_load(self, namespace: str, *, format: str | None = None) -> SyncLoad:
        """The working context as keyed items of `namespace`, with the revision to save on."""
        data = self._json("GET", "sync/", params={"namespace": namespace, "format": format})
        return SyncLoad(
            revision=data["revision"], state=data["state"], summary=data["summary"],
            document=data["document"],
            items=[SyncItem(i["key"], i["own"], i["digest"], _event(i["event"]))
                   for i in data["items"]], rendered=data.get("rendered"))

    def sync_save(self, namespace: str, *, items: list[dict[str, Any]] | None = None,
                  removed: list[str] | None = None, base_revision: int | None = None,
                  part_size: int = 500, part_bytes: int = 4_000_000,
                  **document_parts: Any) -> dict[str, Any]:
        """Save items ({"key", "event"}) and removals in one transaction, whatever their number.

        Large saves go as several requests of one upload: the server stages the early parts
        and applies everything with the last one, so the thread changes all at once or not at
        all; each part, and the whole save, can be resent safely (same upload id).
        `document_parts`: state, memory, summary, document, sent with the last part.
        """
        removed = removed or []
        now = local_now()  # the agent's time for items that carry none (not part of a digest)
        items = [item if "occurred_at" in item.get("event", {}) else
                 {**item, "event": {**item["event"], "occurred_at": now}} for item in items or []]
        upload_id = uuid.uuid4().hex
        chunks: list[tuple[list[dict[str, Any]], list[str]]] = [([], [])]
        size = 0
        for item in items:
            item_size = len(json_module.dumps(item, default=str))
            chunk = chunks[-1]
            if chunk[0] and (len(chunk[0]) >= part_size or size + item_size > part_bytes):
                chunks.append(([], []))
                size = 0
            chunks[-1][0].append(item)
            size += item_size
        for start in range(0, len(removed), part_size):
            if len(chunks[-1][0]) + len(chunks[-1][1]) >= part_size:
                chunks.append(([], []))
            chunks[-1][1].extend(removed[start:start + part_size])
        result: dict[str, Any] = {}
        for number, (part_items, part_removed) in enumerate(chunks):
            body: dict[str, Any] = {"namespace": namespace, "items": part_items,
                                    "removed": part_removed, "base_revision": base_revision,
                                    "upload_id": upload_id, "part": number, "parts": len(chunks)}
            if number == len(chunks) - 1:
                body.update(document_parts)
            # Safe to resend: a part replaces itself, a replayed last part gets the first answer.
            result = self._json("POST", "sync/", json=body, idempotent=True)
        return result


# ------------------------------------------------------------------------------- sync

class SyncTracker:
    """What one adapter object knows of one thread: the revision it loaded and the digest of
    every item as it would send it, so a save sends only new and changed items and the keys
    the framework dropped. One per adapter object (per process); a save on a stale load is
    refused with StaleRevision and changes nothing, and the adapter loads again.
    """

    def __init__(self, thread: ThreadHandle, namespace: str) -> None:
        self.thread, self.namespace = thread, namespace
        self.revision: int | None = None
        self.digests: dict[str, str] = {}

    def load(self, *, format: str | None = None) -> SyncLoad:
        loaded = self.thread.sync_load(self.namespace, format=format)
        self.revision = loaded.revision
        self.digests = {i.key: i.digest for i in loaded.items if i.own}
        return loaded

    def seen(self, key: str, event: dict[str, Any]) -> None:
        """The adapter turned a loaded item into the framework's object; this is how it would
        send it back, so sending it unchanged is not a change."""
        self.digests[key] = item_digest(event)

    def save(self, items: list[tuple[str, dict[str, Any]]], *, complete: bool = True,
             **document_parts: Any) -> dict[str, Any] | None:
        """Save the framework's transcript `items` ((key, event) in order).

        complete: `items` is the whole transcript, so known keys missing from it were dropped
        by the framework. Returns the server's answer, or None when there was nothing to send.
        """
        changed: list[dict[str, Any]] = [{"key": k, "event": e} for k, e in items
                                         if self.digests.get(k) != item_digest(e)]
        keys = {k for k, _ in items}
        removed = [k for k in self.digests if k not in keys] if complete else []
        if not changed and not removed and not document_parts:
            return None
        result = self.thread.sync_save(self.namespace, items=changed, removed=removed,
                                       base_revision=self.revision, **document_parts)
        self.revision = result["revision"]
        for k in removed:
            del self.digests[k]
        for item in changed:
            self.digests[item["key"]] = item_digest(item["event"])
        return result


# ------------------------------------------------------------------------------- helpers

def _with_render(event: dict[str, Any], render_id: str | None) -> dict[str, Any]:
    """An LLM call logged after context() names the render it was sent (unless it says)."""
    if event.get("type") not in LLM_CALL_TYPES or render_id is None:
        return event
    data = event.get("data")
    if data is None:
        data = {}
    if not isinstance(data, dict) or "render_id" in data or "messages" in data:
        return event
    return {**event, "data": {**data, "render_id": render_id}}


def _batch(events: list[dict[str, Any]], render_id: str | None) -> dict[str, Any]:
    """An append's body: events without a client_id get a fresh one, so the batch can be
    retried safely, and LLM calls name the last render."""
    return {"events": [_with_render(e if e.get("client_id") else {**e, "client_id": uuid.uuid4().hex},
                                    render_id) for e in events]}


def _llm_call_events(model: str, messages: list[dict[str, Any]] | None, usage: dict[str, Any],
                     run_id: str | None, data: dict[str, Any]) -> list[dict[str, Any]]:
    start: dict[str, Any] = {"model": model, **data}
    if messages is not None:
        start["messages"] = messages
    usage = {k: v for k, v in usage.items() if v is not None}
    extra = {"run_id": run_id} if run_id else {}
    events: list[dict[str, Any]] = [{"type": "LLMCallStart", "data": start, **extra},
                                    {"type": "LLMComplete", "data": {"model": model, **usage}, **extra}]
    if messages is not None:  # the messages name what was sent; no render to point at
        events[1]["data"]["render_id"] = None
    return events


def _context(data: dict[str, Any]) -> Context:
    return Context(messages=data["messages"], stats=data["stats"], format=data["format"],
                   system=data.get("system"), render_id=data.get("render_id"))


def _rebuilt(data: dict[str, Any]) -> Context:
    return Context(messages=data["messages"], stats={k: data[k] for k in (
        "max_tokens", "total_tokens", "prefix_hash", "fits")}, format=data["format"],
        system=data.get("system"), render_id=data["id"])


def _segment(name: str) -> str:
    """A name as one URL path segment: "?" and "#" (and the rest) percent-encoded. A "/" cannot
    be carried in a path segment at all (servers decode it before routing)."""
    return quote(name, safe="")


def _param(value: Any) -> Any:
    return ("true" if value else "false") if isinstance(value, bool) else value


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _error(response: httpx.Response) -> ContextStoreError:
    """The exception for an error answer, from the API's {"error": {...}} shape when present."""
    status = response.status_code
    try:
        error = response.json()["error"]
        code, message, details = error["code"], error["message"], error.get("details") or {}
    except (ValueError, KeyError, TypeError):
        code, message, details = "http_error", response.text[:500] or response.reason_phrase, {}
    cls = ERRORS.get(status) or (ServerError if status >= 500 else ContextStoreError)
    return cls(message, status=status, code=code, details=details)


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
