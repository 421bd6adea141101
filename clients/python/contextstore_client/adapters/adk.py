"""Google ADK: a ``SessionService`` kept in contextstore (google-adk 2.13.0).

    from contextstore_client.adapters.adk import ContextStoreSessionService

    runner = Runner(agent=agent, app_name="shop", session_service=ContextStoreSessionService(
        AsyncContextStore(url, token)))

An ADK session is a contextstore session (app = app_name, user_id, key = session id). Each
event is one contextstore event, readable in the dashboard: user text a Message, model text
an LLMOutput, function calls a ToolCall (the model's text beside them its content, the calls in
``data["tool_calls"]``: id, name, arguments) and function responses a ToolResult naming the
call in ``data["tool_call_id"]`` (its text the response's ``result``, or the response as JSON;
an event answering parallel calls adds a FunctionResponse row for each further response,
event_records), so renders pair them; thoughts Reasoning; invocation_id is the run, the event id the
client_id, its timestamp occurred_at, and the rest of the event is kept in ``data["adk"]``: its
id, invocation id and (of a single text part) text are not copied there but read back from the
row (``data["adk_row"]`` lists them), so each is stored once. Session state is the thread's state;
``app:`` and ``user:`` keys live in contextstore's app and user scopes (shared across
sessions, revisioned); ``temp:`` keys are never stored.

append_event is one conditional commit (event, state patch, scope patches) based on the
history the session was loaded with: if another writer appended since, it raises ADK's
StaleSessionError ("modified in storage"), like ADK's DatabaseSessionService, and nothing is
written. create, get_session, delete and get_user_state are one request each; list_sessions
one per page of 500.
"""

from __future__ import annotations

import asyncio
import json
import os
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event
from google.adk.memory._utils import format_timestamp
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.in_memory_memory_service import (  # ADK's own word matching
    _extract_searchable_words,
    _extract_words_lower,
)
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State
from google.genai import types

from contextstore_client import AsyncContextStore, Conflict, ContextStore, StaleRevision

__all__ = ["ContextStoreMemoryService", "ContextStoreSessionService", "event_record", "event_records",
           "make_test_memory_service", "make_test_service"]

# EventActions' maps that default to empty: left out of the stored copy when empty.
EMPTY_ACTION_MAPS = ("state_delta", "artifact_delta", "requested_auth_configs",
                     "requested_tool_confirmations")
PART_TYPE = "FunctionResponse"  # a parallel call's response after the first (event_records)
STALE_MESSAGE = ("The session has been modified in storage since it was loaded. "
                 "Please reload the session before appending more events.")


def split_state(state: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """ADK state keys into (session, app, user) parts, prefixes stripped; temp: dropped."""
    session: dict[str, Any] = {}
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    for key, value in (state or {}).items():
        if key.startswith(State.APP_PREFIX):
            app[key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            user[key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            session[key] = value
    return session, app, user


def merge_state(session: dict[str, Any], app: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    return {**session, **{State.APP_PREFIX + k: v for k, v in app.items()},
            **{State.USER_PREFIX + k: v for k, v in user.items()}}


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat()


def _timestamp(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def event_record(event: Event) -> dict[str, Any]:
    """The contextstore event for one ADK event (the rest of it in data["adk"], see _slim)."""
    parts = list(event.content.parts or []) if event.content else []
    texts = [p.text for p in parts if p.text and not p.thought]
    thoughts = [p.text for p in parts if p.text and p.thought]
    calls = [p.function_call for p in parts if p.function_call]
    responses = [p.function_response for p in parts if p.function_response]
    record: dict[str, Any] = {"role": "user" if event.author == "user" else "assistant", "call_id": ""}
    paired: dict[str, Any] = {}  # beside the ADK event in data: its calls, or the call it answers
    if calls:
        # The model's text beside its calls is the content; the calls are data.tool_calls.
        record.update(type="ToolCall", call_id=calls[0].id or "", content="\n".join(texts))
        paired["tool_calls"] = [{"id": c.id or "", "name": c.name or "", "arguments": c.args or {}}
                                for c in calls]
    elif responses:  # the first response; event_records adds one event for each other
        record.update(type="ToolResult", role="tool", call_id=responses[0].id or "",
                      content=_response_text(responses[0].response))
        paired["tool_call_id"] = responses[0].id or ""
    elif texts:
        record.update(type="Message" if event.author == "user" else "LLMOutput", content="\n".join(texts))
    elif thoughts:
        record.update(type="Reasoning", content="\n".join(thoughts))
    else:
        # State changes, transfers, escalations: runtime entries the model does not read.
        record.update(type="AgentEvent", content=f"{event.author}", visible=False)
    record.update(
        client_id=event.id, run_id=(event.invocation_id or "")[:200], step=(event.author or "")[:200],
        occurred_at=_iso(event.timestamp), call_id=record["call_id"][:200],
    )
    record["data"] = {**_slim(event.model_dump(mode="json", exclude_none=True), record), **paired}
    return record


def event_records(event: Event) -> list[dict[str, Any]]:
    """The contextstore events for one ADK event: event_record, and when the event answers
    parallel calls (ADK merges their responses into one event) a FunctionResponse for each
    response after the first, naming its call (``data.tool_call_id``) and the ADK event
    (``data.adk_part``), so renders pair every call with its result. get_session reads only
    event_record's types (ADK_TYPES), so they are no ADK events of their own."""
    record = event_record(event)
    parts = list(event.content.parts or []) if event.content and record["type"] == "ToolResult" else []
    responses = [p.function_response for p in parts if p.function_response]
    records = [record]
    for n, response in enumerate(responses[1:], start=1):
        records.append({
            "type": PART_TYPE, "role": "tool", "content": _response_text(response.response),
            "call_id": (response.id or "")[:200], "client_id": f"{event.id}#{n}"[:200],
            "run_id": record["run_id"], "step": record["step"], "occurred_at": record["occurred_at"],
            "data": {"tool_call_id": response.id or "", "adk_part": event.id}})
    return records


def _response_text(response: Any) -> str:
    """A function response as the text a model reads: a lone ``result`` string as it is, any
    other response as JSON."""
    if isinstance(response, dict) and len(response) == 1 and isinstance(response.get("result"), str):
        return str(response["result"])
    return json.dumps(response, ensure_ascii=False, default=str)


def _slim(whole: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """data for an ADK event dumped whole: without what the event row holds already (listed in
    data["adk_row"], put back by _whole on read) and the empty action maps that are ADK's
    defaults. A chat turn's copy shrinks from ~800 to ~250 bytes."""
    row: list[str] = []
    for key, field in (("id", "client_id"), ("invocation_id", "run_id")):
        if whole.get(key) and whole[key] == record[field]:
            del whole[key]
            row.append(key)
    parts = (whole.get("content") or {}).get("parts") or []
    texts = [i for i, part in enumerate(parts) if "text" in part]
    if len(texts) == 1 and parts[texts[0]]["text"] == record["content"]:
        del parts[texts[0]]["text"]
        row.append(f"text:{texts[0]}")
    actions = whole.get("actions") or {}
    for key in EMPTY_ACTION_MAPS:
        if actions.get(key) == {}:
            del actions[key]
    return {"adk": whole, "adk_row": row} if row else {"adk": whole}


READ_FIELDS = ["client_id", "run_id", "content", "data"]  # what get_session reads of each event (_whole)
# The types event_record gives an ADK event: get_session reads only these (not event_records'
# FunctionResponse parts), so num_recent_events counts ADK events.
ADK_TYPES = ["Message", "LLMOutput", "ToolCall", "ToolResult", "Reasoning", "AgentEvent"]


def _whole(stored: dict[str, Any]) -> dict[str, Any]:
    """The ADK event _slim kept in a stored event's data, with what it left to the row."""
    data = stored["data"]
    whole: dict[str, Any] = data["adk"]
    for item in data.get("adk_row") or ():
        if item == "id":
            whole["id"] = stored["client_id"]
        elif item == "invocation_id":
            whole["invocation_id"] = stored["run_id"]
        elif item.startswith("text:"):
            whole["content"]["parts"][int(item[5:])]["text"] = stored["content"]
    return whole


class ContextStoreSessionService(BaseSessionService):
    """ADK's BaseSessionService over contextstore."""

    def __init__(self, client: ContextStore | AsyncContextStore, *, namespace: str = ""):
        if "/" in namespace:
            raise ValueError("namespace must not contain '/'")
        self.client = client
        self.namespace = namespace
        self._owned = False

    def _app(self, app_name: str) -> str:
        return f"{self.namespace}/{app_name}" if self.namespace else app_name

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self.client, name)
        if isinstance(self.client, AsyncContextStore):
            return await method(*args, **kwargs)
        return await asyncio.to_thread(method, *args, **kwargs)

    def _session(self, app_name: str, read: dict[str, Any], events: list[Event]) -> Session:
        session = Session(
            id=read["key"], app_name=app_name, user_id=read["user_id"],
            state=merge_state(read["state"], read.get("app_state") or {}, read.get("user_state") or {}),
            events=events, last_update_time=_timestamp(read["last_activity_at"]),
        )
        session._storage_update_marker = str(read["last_seq"])
        return session

    async def create_session(self, *, app_name: str, user_id: str, state: dict[str, Any] | None = None,
                             session_id: str | None = None) -> Session:
        session_id = (session_id or "").strip() or str(uuid.uuid4())
        session_state, app_state, user_state = split_state(state)
        try:
            read = await self._call("create_agent_session", self._app(app_name), user_id, session_id,
                                    state=session_state, app_state=app_state, user_state=user_state,
                                    agent=app_name)
        except Conflict as exc:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from exc
        return self._session(app_name, read, [])

    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: GetSessionConfig | None = None) -> Session | None:
        config = config or GetSessionConfig()
        after = _iso(config.after_timestamp) if config.after_timestamp is not None else None
        read = await self._call("read_agent_session", self._app(app_name), user_id, session_id,
                                limit=config.num_recent_events, after=after, types=ADK_TYPES,
                                fields=READ_FIELDS)
        if read is None:
            return None
        events = [Event.model_validate(_whole(e)) for e in read["events"]
                  if isinstance(e.get("data"), dict) and "adk" in e["data"]]
        return self._session(app_name, read, events)

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        sessions: list[Session] = []
        cursor = None
        while True:
            page = await self._call("list_agent_sessions", self._app(app_name), user_id=user_id,
                                    cursor=cursor, limit=500)
            for row in page["results"]:
                user_state = page["user_states"].get(row["user_id"]) or {}
                sessions.append(self._session(app_name, {**row, "app_state": page["app_state"],
                                                         "user_state": user_state}, []))
            cursor = page["next_cursor"]
            if not cursor:
                break
        sessions.reverse()  # ADK lists oldest activity first
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await self._call("delete_agent_session", self._app(app_name), user_id, session_id)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        scopes = await self._call("scoped_states", self._app(app_name), user_id)
        return dict(scopes["user_state"])

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        delta = event.actions.state_delta if event.actions and event.actions.state_delta else {}
        session_delta, app_delta, user_delta = split_state(delta)
        marker = session._storage_update_marker
        try:
            result = await self._call(
                "commit_agent_session", self._app(session.app_name), session.user_id, session.id,
                events=event_records(event), state=session_delta or None, app_state=app_delta or None,
                user_state=user_delta or None, expected_last_seq=int(marker) if marker is not None else None)
        except StaleRevision as exc:
            raise StaleSessionError(STALE_MESSAGE) from exc
        session._storage_update_marker = str(result["last_seq"])
        session.last_update_time = event.timestamp
        return self._commit_event_to_session(session, event)

    async def __aenter__(self) -> ContextStoreSessionService:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the client when this service made it (the test factory)."""
        if self._owned:
            await _close(self.client)


async def _close(client: ContextStore | AsyncContextStore) -> None:
    """Close a client of either kind (a service's own, made by the test factories)."""
    if isinstance(client, AsyncContextStore):
        await client.aclose()
    else:
        client.close()


def make_test_service(*, namespace: str | None = None) -> ContextStoreSessionService:
    """A service on the server named by CONTEXTSTORE_URL / CONTEXTSTORE_TOKEN over a fresh
    random namespace (unless given); close() closes the client it made."""
    client = ContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"])
    service = ContextStoreSessionService(client, namespace=namespace or uuid.uuid4().hex)
    service._owned = True
    return service


# --- the memory service ------------------------------------------------------------------------

UNKNOWN_SESSION_ID = "__unknown_session_id__"  # InMemoryMemoryService's bucket for add_events
MAX_SEARCH_RESULTS = 10
STORE_PAGE = 10_000  # the store's largest search page


class ContextStoreMemoryService(BaseMemoryService):
    """ADK's BaseMemoryService over contextstore's long-term store, behaving as ADK's
    InMemoryMemoryService (google-adk 2.13.0): sessions' events with content are memories of
    their (app, user); add_session_to_memory replaces what a session holds, add_events_to_memory
    appends events not held yet; search_memory scores each memory by the query words it holds
    (ADK's own word extraction), returns at most ten, most words first, equal ones in the order
    they were added; delete_memory removes a memory from every session, and it is never added
    again. add_memory is not supported, as by InMemoryMemoryService.

    Each memory is a store item: namespace ``["adk_memory", app_name, user_id]`` (behind
    ``namespace`` when given), key ``"{session_id}/{event_id}"``, value ``{"content": <the
    event's content as ADK serialises it>, "author", "timestamp", "text": <its text parts
    joined>, "session_id", "event_id", "position"}`` (only ``text`` indexed); a session held is
    marked by the item ``"{session_id}/"`` (so an empty session keeps its place), a deleted
    memory by an item under ``[..., "deleted"]``. A person sees, edits and undoes them in the
    dashboard as that user's memories.

    ``by_meaning=True``: search_memory asks the store to recall by meaning (the server's
    embedder over ``text``) and returns its ten best instead of matching words.

    Requests: add_session_to_memory and add_events_to_memory two (read what the session holds,
    write the difference in one batch), search_memory one per 10,000 memories of the user (the
    words are matched here, as InMemoryMemoryService matches them), delete_memory two.
    """

    def __init__(self, client: ContextStore | AsyncContextStore, *, namespace: str = "",
                 by_meaning: bool = False):
        self.client = client
        self.namespace = namespace
        self.by_meaning = by_meaning
        self._owned = False

    def _ns(self, app_name: str, user_id: str) -> list[str]:
        return ([self.namespace] if self.namespace else []) + ["adk_memory", app_name, user_id]

    async def _batch(self, ops: list[dict[str, Any]]) -> list[Any]:
        results: list[Any] = []
        for start in range(0, len(ops), 1000):  # the store's largest batch
            chunk = ops[start:start + 1000]
            if isinstance(self.client, AsyncContextStore):
                results += await self.client.store_batch(chunk)
            else:
                results += await asyncio.to_thread(self.client.store_batch, chunk)
        return results

    async def _held(self, ns: list[str], session_id: str,
                    event_ids: list[str]) -> tuple[dict[str, dict[str, Any]], bool, set[str]]:
        """What a session holds (key -> item), whether it is marked held, and which of
        event_ids were deleted."""
        found, *deleted = await self._batch(
            [{"op": "search", "namespace_prefix": ns, "filter": {"session_id": session_id},
              "limit": STORE_PAGE, "refresh_ttl": False}]
            + [{"op": "get", "namespace": [*ns, "deleted"], "key": event_id, "refresh_ttl": False}
               for event_id in event_ids])
        items = {i["key"]: i for i in found if i["namespace"] == ns}
        marked = items.pop(f"{session_id}/", None) is not None
        return items, marked, {e for e, d in zip(event_ids, deleted, strict=True) if d is not None}

    def _put(self, ns: list[str], session_id: str, event: Event, position: int) -> dict[str, Any]:
        assert event.content is not None
        text = " ".join(p.text for p in event.content.parts or [] if p.text)
        value = {"content": event.content.model_dump(mode="json", exclude_none=True),
                 "author": event.author, "timestamp": event.timestamp, "text": text,
                 "session_id": session_id, "event_id": event.id, "position": position}
        return {"op": "put", "namespace": ns, "key": f"{session_id}/{event.id}", "value": value,
                "index": ["text"]}

    @staticmethod
    def _mark(ns: list[str], session_id: str) -> dict[str, Any]:
        return {"op": "put", "namespace": ns, "key": f"{session_id}/",
                "value": {"session_id": session_id, "session": True}, "index": False}

    async def add_session_to_memory(self, session: Session) -> None:
        ns = self._ns(session.app_name, session.user_id)
        events = [e for e in session.events if e.content and e.content.parts]
        held, marked, deleted = await self._held(ns, session.id, [e.id for e in events])
        ops = [] if marked else [self._mark(ns, session.id)]
        wanted: dict[str, dict[str, Any]] = {}
        for event in events:
            if event.id not in deleted:
                put = self._put(ns, session.id, event, len(wanted))
                wanted.setdefault(put["key"], put)
        for key, put in wanted.items():
            if key not in held or held[key]["value"] != put["value"]:
                ops.append(put)
        ops += [{"op": "put", "namespace": ns, "key": key, "value": None}
                for key in sorted(held.keys() - wanted.keys())]
        if ops:
            await self._batch(ops)

    async def add_events_to_memory(self, *, app_name: str, user_id: str, events: Sequence[Event],
                                   session_id: str | None = None,
                                   custom_metadata: Mapping[str, object] | None = None) -> None:
        ns = self._ns(app_name, user_id)
        session_id = session_id or UNKNOWN_SESSION_ID
        adding = [e for e in events if e.content and e.content.parts]
        held, marked, deleted = await self._held(ns, session_id, [e.id for e in adding])
        ops = [] if marked else [self._mark(ns, session_id)]
        position = max((i["value"].get("position", -1) for i in held.values()), default=-1) + 1
        keys = set(held)
        for event in adding:
            key = f"{session_id}/{event.id}"
            if key not in keys and event.id not in deleted:
                ops.append(self._put(ns, session_id, event, position))
                keys.add(key)
                position += 1
        if ops:
            await self._batch(ops)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        ns = self._ns(app_name, user_id)
        if self.by_meaning:
            # Markers and deletions carry no vectors: the store ranks them last, and they are
            # left out here.
            [found] = await self._batch([{"op": "search", "namespace_prefix": ns, "query": query,
                                          "limit": MAX_SEARCH_RESULTS, "refresh_ttl": False}])
            return SearchMemoryResponse(memories=[
                _entry(i["value"]) for i in found if i["namespace"] == ns and not i["key"].endswith("/")
                and isinstance(i["value"].get("content"), dict) and i.get("score") is not None])
        items: list[dict[str, Any]] = []
        while True:
            [page] = await self._batch([{"op": "search", "namespace_prefix": ns, "limit": STORE_PAGE,
                                         "offset": len(items), "refresh_ttl": False}])
            items += page
            if len(page) < STORE_PAGE:
                break
        # InMemoryMemoryService's order: sessions as first added, each one's events in order.
        added = {i["value"].get("session_id"): (i["created_at"], i["key"]) for i in items
                 if i["namespace"] == ns and i["key"].endswith("/")}
        memories = sorted(
            (i for i in items if i["namespace"] == ns and not i["key"].endswith("/")
             and isinstance(i["value"].get("content"), dict)),
            key=lambda i: (added.get(i["value"].get("session_id"), (i["created_at"], "")),
                           i["value"].get("position", 0)))
        query_words = _extract_words_lower(query)
        scored: list[tuple[int, MemoryEntry]] = []
        for item in memories:
            text = item["value"].get("text") or ""
            event_words = _extract_searchable_words(text)
            if not event_words:
                continue
            lower = unicodedata.normalize("NFC", text).lower()
            matched = sum(1 for word in query_words
                          if word in event_words or (not word.isascii() and word in lower))
            if matched:
                scored.append((matched, _entry(item["value"])))
        scored.sort(key=lambda pair: -pair[0])
        return SearchMemoryResponse(memories=[entry for _, entry in scored[:MAX_SEARCH_RESULTS]])

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        if not memory_id:
            return
        ns = self._ns(app_name, user_id)
        [found] = await self._batch([{"op": "search", "namespace_prefix": ns, "limit": STORE_PAGE,
                                      "filter": {"event_id": memory_id}, "refresh_ttl": False}])
        found = [i for i in found if i["namespace"] == ns]
        if found:
            await self._batch([{"op": "put", "namespace": ns, "key": i["key"], "value": None} for i in found]
                              + [{"op": "put", "namespace": [*ns, "deleted"], "key": memory_id,
                                  "value": {"event_id": memory_id}, "index": False}])

    async def close(self) -> None:
        """Close the client when this service made it (the test factory)."""
        if self._owned:
            await _close(self.client)


def _entry(value: dict[str, Any]) -> MemoryEntry:
    timestamp = value.get("timestamp")
    return MemoryEntry(id=value.get("event_id"), content=types.Content.model_validate(value["content"]),
                       author=value.get("author"),
                       timestamp=format_timestamp(timestamp) if isinstance(timestamp, (int, float)) else None)


def make_test_memory_service(*, namespace: str | None = None) -> ContextStoreMemoryService:
    """A memory service on the server named by CONTEXTSTORE_URL / CONTEXTSTORE_TOKEN over a fresh
    random namespace (unless given); close() closes the client it made."""
    client = ContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"])
    service = ContextStoreMemoryService(client, namespace=namespace or uuid.uuid4().hex)
    service._owned = True
    return service
