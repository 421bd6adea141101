"""The operations on a server as a whole (sessions, runs, memories, jobs, renders, framework
sessions), written once for ContextStore and AsyncContextStore (see _ops)."""

from __future__ import annotations

import base64
import json
import uuid
from typing import TYPE_CHECKING, Any, TypedDict

from contextstore_client._ops import Steps, call, op, pages
from contextstore_client.errors import NotFound
from contextstore_client.results import (
    Collapse,
    Context,
    Job,
    Memory,
    Run,
    Session,
    Thread,
    _build,
    _collapse,
    _rebuilt,
)

if TYPE_CHECKING:  # typing.Unpack is 3.11+; only the type checker reads it
    from typing_extensions import Unpack


class SessionFilters(TypedDict, total=False):
    """What sessions() and iter_sessions() filter on (None: not filtered)."""

    user_id: str | None
    agent: str | None
    q: str | None
    archived: bool | None


def session_params(filters: SessionFilters) -> dict[str, Any]:
    return {k: v for k, v in filters.items() if v is not None}


class StoreOps:
    """What ContextStore and AsyncContextStore share: every call but the thread handles'."""

    # -- sessions

    @op
    def upsert_session(self, key: str, *, user_id: str = "", agent: str = "", title: str = "",
                       metadata: dict[str, Any] | None = None) -> Steps[Session]:
        """Create the session (user_id, key) or return the existing one (`.created` tells)."""
        response = yield call("POST", "sessions/", response=True, idempotent=True, json={
            "key": key, "user_id": user_id, "agent": agent, "title": title, "metadata": metadata})
        return _build(Session, response.json(), created=response.status_code == 201)

    @op
    def sessions(self, **filters: Unpack[SessionFilters]) -> Steps[list[Session]]:
        """All sessions matching user_id / agent / q / archived, oldest first."""
        return [_build(Session, s) for s in (yield from pages("sessions/", session_params(filters)))]

    @op
    def session(self, session_id: int) -> Steps[Session]:
        return _build(Session, (yield call("GET", f"sessions/{session_id}/")))

    @op
    def update_session(self, /, session_id: int, **changes: Any) -> Steps[Session]:
        """Change title, agent, metadata or archived."""
        return _build(Session, (yield call("PATCH", f"sessions/{session_id}/", json=changes)))

    @op
    def delete_session(self, session_id: int) -> Steps[None]:
        """Delete a session with all its threads and history (not undoable)."""
        yield call("DELETE", f"sessions/{session_id}/")

    @op
    def session_threads(self, session_id: int) -> Steps[list[Thread]]:
        return [_build(Thread, t) for t in (yield from pages(f"sessions/{session_id}/threads/"))]

    # -- threads (the handles: ContextStore.thread, AsyncContextStore.thread)

    def _ensure_thread(self, session_key: str, user_id: str, agent: str, name: str) -> Steps[Thread]:
        return _build(Thread, (yield call("POST", "threads/ensure/", idempotent=True, json={
            "session_key": session_key, "user_id": user_id, "agent": agent, "name": name})))

    def _get_thread(self, thread_id: int) -> Steps[Thread]:
        return _build(Thread, (yield call("GET", f"threads/{thread_id}/")))

    def _import_thread(self, data: dict[str, Any], session_key: str | None, user_id: str | None,
                       name: str | None) -> Steps[Thread]:
        return _build(Thread, (yield call("POST", "threads/import/", json=data, params={
            "session_key": session_key, "user_id": user_id, "name": name})))

    @op
    def undo_collapse(self, collapse_id: int) -> Steps[Collapse]:
        """Bring a collapse's events back (one nesting level at a time)."""
        return _collapse((yield call("POST", f"collapses/{collapse_id}/undo/")))

    # -- runs, memories, jobs, renders

    @op
    def run(self, run_pk: int) -> Steps[Run]:
        return _build(Run, (yield call("GET", f"runs/{run_pk}/")))

    @op
    def complete_run(self, run_pk: int) -> Steps[Run]:
        return _build(Run, (yield call("POST", f"runs/{run_pk}/complete/", json={}, idempotent=True)))

    @op
    def fail_run(self, run_pk: int, error: str = "") -> Steps[Run]:
        return _build(Run, (yield call("POST", f"runs/{run_pk}/fail/", json={"error": error},
                                       idempotent=True)))

    @op
    def interrupt_run(self, run_pk: int) -> Steps[Run]:
        return _build(Run, (yield call("POST", f"runs/{run_pk}/interrupt/", json={}, idempotent=True)))

    @op
    def remember(self, content: str, *, user_id: str = "", key: str | None = None,
                 data: Any = None) -> Steps[Memory]:
        """Store a long-term fact about an end user; with a key it replaces the previous one."""
        response = yield call("POST", "memories/", response=True, idempotent=key is not None, json={
            "user_id": user_id, "key": key, "content": content, "data": data})
        return _build(Memory, response.json(), created=response.status_code == 201)

    @op
    def recall(self, *, user_id: str | None = None, q: str | None = None,
               limit: int = 20) -> Steps[list[Memory]]:
        """Memories (newest first) of a user, optionally matching any word of `q`."""
        data = yield call("GET", "memories/", params={"user_id": user_id, "q": q, "limit": limit})
        return [_build(Memory, m) for m in data["results"]]

    @op
    def store_batch(self, ops: list[dict[str, Any]]) -> Steps[list[Any]]:
        """Run long-term store ops (get, put, move, search, list_namespaces, sweep;
        docs/client.md) in one request and one transaction; one result per op, in order. A batch
        of reads and sweeps is retried on a lost answer (a sweep again sweeps only what is left)."""
        safe = all(o.get("op") in ("get", "search", "list_namespaces", "sweep") for o in ops)
        answer = yield call("POST", "store/batch/", json={"ops": ops}, idempotent=safe)
        return list(answer["results"])

    @op
    def store_get(self, namespace: list[str] | tuple[str, ...], key: str, *,
                  refresh_ttl: bool = True) -> Steps[dict[str, Any] | None]:
        """The item at (namespace, key), or None."""
        [item] = yield from StoreOps.store_batch.steps(self, [{
            "op": "get", "namespace": list(namespace), "key": key, "refresh_ttl": refresh_ttl}])
        return item  # type: ignore[no-any-return]

    @op
    def store_put(self, namespace: list[str] | tuple[str, ...], key: str,
                  value: dict[str, Any] | None, *, index: list[str] | bool | None = None,
                  ttl: float | None = None,
                  vectors: dict[str, list[float]] | None = None) -> Steps[None]:
        """Store `value` at (namespace, key) as its next version (None deletes). `index`: the
        field paths recalled by (None: the whole value; False: not indexed); `ttl` in minutes;
        `vectors`: {field path: embedding} computed by the caller."""
        yield from StoreOps.store_batch.steps(self, [{
            "op": "put", "namespace": list(namespace), "key": key, "value": value,
            "index": index, "ttl": ttl, "vectors": vectors}])
        return None

    @op
    def store_delete(self, namespace: list[str] | tuple[str, ...], key: str) -> Steps[None]:
        """Delete the item (a version a person can undo); a missing item is no error."""
        yield from StoreOps.store_batch.steps(self, [{
            "op": "put", "namespace": list(namespace), "key": key, "value": None}])
        return None

    @op
    def store_move(self, namespace: list[str] | tuple[str, ...], key: str,
                   new_key: str) -> Steps[dict[str, Any] | None]:
        """Rename an item within its namespace; the moved item, or None when there is none.
        Raises Conflict (409) when new_key is taken."""
        [item] = yield from StoreOps.store_batch.steps(self, [{
            "op": "move", "namespace": list(namespace), "key": key, "new_key": new_key}])
        return item  # type: ignore[no-any-return]

    @op
    def store_search(self, namespace_prefix: list[str] | tuple[str, ...], *, query: str | None = None,
                     query_vector: list[float] | None = None, filter: dict[str, Any] | None = None,
                     limit: int = 10, offset: int = 0,
                     refresh_ttl: bool = True) -> Steps[list[dict[str, Any]]]:
        """Items under a namespace prefix, newest first, or best first by `query` (by meaning
        with vectors, else by words) or `query_vector`; `filter` as LangGraph's ($eq, $ne,
        $gt, $gte, $lt, $lte). Each item has a `score` (None when not scored)."""
        [items] = yield from StoreOps.store_batch.steps(self, [{
            "op": "search", "namespace_prefix": list(namespace_prefix), "query": query,
            "query_vector": query_vector, "filter": filter, "limit": limit, "offset": offset,
            "refresh_ttl": refresh_ttl}])
        return items  # type: ignore[no-any-return]

    @op
    def store_list_namespaces(self, *, prefix: list[str] | tuple[str, ...] | None = None,
                              suffix: list[str] | tuple[str, ...] | None = None,
                              max_depth: int | None = None, limit: int = 100,
                              offset: int = 0) -> Steps[list[list[str]]]:
        """The namespaces that hold items, sorted; "*" in prefix or suffix matches any label;
        max_depth truncates them (duplicates merged)."""
        [found] = yield from StoreOps.store_batch.steps(self, [{
            "op": "list_namespaces", "prefix": None if prefix is None else list(prefix),
            "suffix": None if suffix is None else list(suffix), "max_depth": max_depth,
            "limit": limit, "offset": offset}])
        return found  # type: ignore[no-any-return]

    @op
    def job(self, job_id: str) -> Steps[Job]:
        return _build(Job, (yield call("GET", f"jobs/{job_id}/")))

    @op
    def render(self, render_id: str) -> Steps[Context]:
        """A recorded render rebuilt: exactly the messages that call was given."""
        return _rebuilt((yield call("GET", f"renders/{render_id}/")))

    @op
    def render_diff(self, a: str, b: str) -> Steps[dict[str, Any]]:
        """What changed between two recorded renders (events, blocks, summary, prefix, tokens)."""
        diff: dict[str, Any] = yield call("GET", f"renders/{a}/diff/{b}/")
        return diff

    # -- framework sessions (/agent-sessions/), addressed by (app, user_id, key, thread): every
    # call is one request; answers are plain dicts in the API's shapes, blob bytes decoded.

    @op
    def create_agent_session(
        self, app: str, user_id: str, key: str, *, thread: str = "main", state: dict[str, Any] | None = None,
        app_state: dict[str, Any] | None = None, user_state: dict[str, Any] | None = None, agent: str = "",
        title: str = "", metadata: dict[str, Any] | None = None,
    ) -> Steps[Any]:
        """Create-only (Conflict if it exists): session, first thread, initial state and scopes."""
        return _read_in((yield call("POST", "agent-sessions/", idempotent=False, json={
            "app": app, "user_id": user_id, "key": key, "thread": thread, "state": state,
            "app_state": app_state, "user_state": user_state, "agent": agent, "title": title,
            "metadata": metadata})))

    @op
    def read_agent_session(
        self, app: str, user_id: str, key: str, *, thread: str = "main", limit: int | None = None,
        after: str | None = None, types: list[str] | None = None, client_id: str | None = None,
        data_contains: dict[str, Any] | None = None, blobs: list[str] | None = None,
        before_client_id: str | None = None, blob_prefixes: list[str] | None = None,
        event_blobs: bool = False, fields: list[str] | None = None,
    ) -> Steps[Any]:
        """One request: session, state, scopes, newest `limit` events (only the event `fields`
        named, all by default), blobs named by key or prefix and (event_blobs) those the
        events' data.blob_refs name; None if missing."""
        params: dict[str, Any] = {"app": app, "user_id": user_id, "key": key, "thread": thread,
                                  "limit": limit, "after": after, "client_id": client_id,
                                  "before_client_id": before_client_id,
                                  "type": types or None, "blob": blobs or None,
                                  "blob_prefix": blob_prefixes or None,
                                  "event_blobs": "true" if event_blobs else None,
                                  "fields": ",".join(fields) if fields else None}
        if data_contains is not None:
            params["data_contains"] = json.dumps(data_contains)
        try:
            return _read_in((yield call("GET", "agent-sessions/read/", params=params)))
        except NotFound:
            return None

    @op
    def commit_agent_session(
        self, app: str, user_id: str, key: str, *, thread: str = "main",
        events: list[dict[str, Any]] | None = None, state: dict[str, Any] | None = None,
        app_state: dict[str, Any] | None = None, user_state: dict[str, Any] | None = None, blobs: Any = None,
        if_match: int | None = None, expected_last_seq: int | None = None,
        batch_id: str | None = None, create: bool = False,
    ) -> Steps[Any]:
        """The atomic conditional append. Always sent with a batch id, so a retry after a lost
        answer returns the first answer instead of applying twice (hence safe to retry)."""
        body = {"app": app, "user_id": user_id, "key": key, "thread": thread, "create": create,
                "events": [{"client_id": uuid.uuid4().hex, **e} for e in events or []],
                "state": state, "app_state": app_state, "user_state": user_state,
                "blobs": _blob_out(blobs or []), "expected_last_seq": expected_last_seq,
                "batch_id": batch_id or uuid.uuid4().hex}
        headers = {"If-Match": f'"{if_match}"'} if if_match is not None else None
        return (yield call("POST", "agent-sessions/commit/", json=body, headers=headers, idempotent=True))

    @op
    def retract_agent_event(self, app: str, user_id: str, key: str, *, thread: str = "main") -> Steps[Any]:
        """Retract the newest event and return it (None when there is none). Not retried."""
        return (yield call("POST", "agent-sessions/retract/", idempotent=False, json={
            "app": app, "user_id": user_id, "key": key, "thread": thread}))["event"]

    @op
    def clear_agent_session(self, app: str, user_id: str, key: str, *, thread: str = "main") -> Steps[Any]:
        return (yield call("POST", "agent-sessions/clear/", idempotent=True, json={
            "app": app, "user_id": user_id, "key": key, "thread": thread}))["cleared"]

    @op
    def delete_agent_session(self, app: str, user_id: str = "", key: str | None = None, *,
                             key_prefix: str | None = None) -> Steps[Any]:
        """Delete one session, or every session of the app whose key starts with key_prefix."""
        body: dict[str, str | None] = {"app": app, "user_id": user_id}
        body.update({"key": key} if key is not None else {"key_prefix": key_prefix})
        return (yield call("POST", "agent-sessions/delete/", json=body, idempotent=True))["deleted"]

    @op
    def copy_agent_session(self, app: str, user_id: str, key: str, target_key: str) -> Steps[Any]:
        """Copy a session (every thread's history, state and blobs) to a new key; returns the
        number of events copied. NotFound without the source, Conflict if the target exists."""
        return (yield call("POST", "agent-sessions/copy/", idempotent=False, json={
            "app": app, "user_id": user_id, "key": key, "target_key": target_key}))["copied"]

    @op
    def remove_agent_events(self, app: str, user_id: str = "", *, keys: list[str] | None = None,
                            run_ids: list[str] | None = None, types: list[str] | None = None,
                            keep_latest: bool = False,
                            blob_prefixes: list[str] | None = None) -> Steps[Any]:
        """Take events out of the history (kept for audit) of the sessions `keys`, or of the
        runs `run_ids` in every session of the app, with the blobs `blob_prefixes` name
        ("w/{client_id}/"); returns how many left."""
        body: dict[str, Any] = {"app": app, "user_id": user_id, "keep_latest": keep_latest,
                                "blob_prefixes": blob_prefixes or []}
        body.update({"keys": keys} if keys is not None else {"run_ids": run_ids})
        if types:
            body["type"] = types
        return (yield call("POST", "agent-sessions/remove/", json=body, idempotent=True))["removed"]

    @op
    def list_agent_sessions(self, app: str, *, user_id: str | None = None, thread: str = "main",
                            cursor: str | None = None, limit: int = 50) -> Steps[Any]:
        """One page {results: [session with state], next_cursor}, newest activity first."""
        return (yield call("GET", "agent-sessions/", params={
            "app": app, "user_id": user_id, "thread": thread, "cursor": cursor, "limit": limit}))

    @op
    def agent_blobs(self, app: str, user_id: str, key: str, keys: list[str], *,
                    prefixes: list[str] | None = None, thread: str = "main") -> Steps[Any]:
        """Several blobs at once (by key or key prefix): {key: {data: bytes, meta, content_type,
        size}}; {} when the session or thread does not exist."""
        try:
            return _blobs_in((yield call("GET", "agent-sessions/blobs/", params={
                "app": app, "user_id": user_id, "key": key, "thread": thread, "blob": keys or None,
                "prefix": prefixes or None})))
        except NotFound:
            return {}

    @op
    def scoped_states(self, app: str, user_id: str = "") -> Steps[Any]:
        return (yield call("GET", "agent-sessions/scopes/", params={"app": app, "user_id": user_id}))

    @op
    def patch_scoped_state(self, app: str, scope: str, patch: dict[str, Any], *,
                           user_id: str = "") -> Steps[Any]:
        return (yield call("PATCH", "agent-sessions/scopes/", idempotent=False, json={
            "app": app, "scope": scope, "user_id": user_id, "patch": patch}))


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
