"""The operations on one thread, written once for ThreadHandle and AsyncThreadHandle (see _ops)."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import quote

from contextstore_client._ops import Call, Steps, call, op, pages
from contextstore_client.errors import Forbidden, NotFound
from contextstore_client.results import (
    AppendedEvent,
    Block,
    Clear,
    Collapse,
    Context,
    Event,
    ProviderState,
    Run,
    State,
    StateRevision,
    SyncItem,
    SyncLoad,
    Thread,
    Window,
    _build,
    _collapse,
    _context,
    _event,
    _state,
)

if TYPE_CHECKING:  # typing.Unpack is 3.11+; only the type checker reads it
    from typing_extensions import Unpack

# Events that log a model call; they may carry the render_id of the context that was sent.
LLM_CALL_TYPES = ("LLMCallStart", "LLMComplete", "LLMCallEnd")
UNSET_TIME: Any = "local"  # set_input's default: this process's local time


def local_now() -> str:
    """The agent's local time with its UTC offset, as the server stores it for the framework."""
    return datetime.now().astimezone().isoformat()


class EventFilters(TypedDict, total=False):
    """What events() and iter_events() filter on, all at once (None: not filtered). `limit`
    keeps only the newest matches; `page_size` is how many come per request."""

    type: str | list[str] | None
    q: str | None
    regex: str | None
    run_id: str | None
    call_id: str | None
    step: str | None
    after_seq: int | None
    before_seq: int | None
    status: str | None
    visible: bool | None
    limit: int | None
    page_size: int | None


def event_params(filters: EventFilters) -> dict[str, Any]:
    """type: a list of whole names (sent as repeated values; a name may hold a comma), or a
    comma-separated str."""
    kinds = filters.get("type")
    if isinstance(kinds, list) and len(kinds) == 1 and "," in kinds[0]:
        kinds = kinds * 2  # a single value is read as a comma-separated list: repeat it
    params: dict[str, Any] = {**filters, "type": kinds}
    return {k: v for k, v in params.items() if v is not None}


class ThreadOps:
    """What ThreadHandle and AsyncThreadHandle share: the thread, its path, the last render,
    and every operation on the thread."""

    def __init__(self, client: Any, thread: Thread):
        self.client = client
        self.thread = thread
        self.id = thread.id
        self._path = f"threads/{thread.id}/"
        # The render the agent fetched last; LLM-call events logged after it carry its id.
        self.last_render_id: str | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id} {self.thread.session_key}/{self.thread.name}>"

    def _call(self, method: str, sub: str = "", **options: Any) -> Call:
        return call(method, self._path + sub, **options)

    @op
    def refresh(self) -> Steps[Thread]:
        """Re-read the thread's counters and settings."""
        self.thread = _build(Thread, (yield self._call("GET")))
        return self.thread

    # -- events

    @op
    def append(self, events: list[dict[str, Any]]) -> Steps[list[AppendedEvent]]:
        """Append a batch (one transaction). Events without a client_id get a fresh one, so the
        batch can be retried safely; returns seq, id, token_count and client_id of each."""
        data = yield self._call("POST", "events/", json=_batch(events, self.last_render_id), idempotent=True)
        return [_build(AppendedEvent, e) for e in data["events"]]

    @op
    def log_llm_call(self, /, model: str, *, messages: list[dict[str, Any]] | None = None,
                     input_tokens: int | None = None, output_tokens: int | None = None,
                     cost: float | None = None, run_id: str | None = None,
                     tools: list[dict[str, Any]] | None = None,
                     params: dict[str, Any] | None = None,
                     **data: Any) -> Steps[list[AppendedEvent]]:
        """Log one model call: LLMCallStart (with the last context()'s render_id, or the exact
        `messages` you sent when you built the prompt yourself) and LLMComplete with usage.
        `tools` (the tool definitions sent, kept once however often they repeat) and `params`
        (temperature, max_tokens, tool_choice, ...) make the dashboard's "as sent" the whole
        request."""
        if tools is not None:
            data["tools"] = tools
        if params is not None:
            data["params"] = params
        usage = {"input_tokens": input_tokens, "output_tokens": output_tokens, "cost": cost}
        events = _llm_call_events(model, messages, usage, run_id, data)
        return (yield from ThreadOps.append.steps(self, events))

    @op
    def append_one(self, /, type: str, content: str = "", **fields: Any) -> Steps[AppendedEvent]:
        """Append a single event: `append_one("Message", "hi", role="user")`."""
        return (yield from ThreadOps.append.steps(self, [{"type": type, "content": content, **fields}]))[0]

    @op
    def events(self, **filters: Unpack[EventFilters]) -> Steps[list[Event]]:
        """All events matching all filters, oldest first (iter_events: page by page)."""
        return [_event(e) for e in (yield from pages(self._path + "events/", event_params(filters)))]

    # -- collapses and summaries

    @op
    def collapse(self, start_position: int, end_position: int, summary_text: str, *,
                 widen: bool = False) -> Steps[Collapse]:
        """Replace the working context at positions [start_position, end_position] (both
        included) with a summary. An ordinary event's position is its seq. A range that would
        split a tool call from its results is refused (InvalidRequest naming the events), or
        with `widen=True` grown to the whole exchanges."""
        return _collapse((yield self._call("POST", "collapse/", json={
            "start_position": start_position, "end_position": end_position,
            "summary_text": summary_text, **_widen(widen)})))

    @op
    def summarize(self, start_position: int, end_position: int, *, widen: bool = False) -> Steps[str]:
        """Queue a worker to summarize and collapse the range (inclusive); returns the job id.
        `widen`: as collapse's."""
        job_id: str = (yield self._call("POST", "collapse/", json={
            "start_position": start_position, "end_position": end_position, "summarize": True,
            **_widen(widen)}))["job_id"]
        return job_id

    @op
    def configure_summarizer(self, config: dict[str, Any] | None) -> Steps[Thread]:
        """Set the automatic summarizer (e.g. {"token_budget": {"max_tokens": 8000}}); None
        removes the thread's setting, {} switches summarization off even under a default."""
        # An explicit JSON null (httpx sends no body for json=None): null removes the setting.
        body = json.dumps(config).encode()
        self.thread = _build(Thread, (yield self._call("PUT", "summarizer/", content=body,
                                                       headers={"Content-Type": "application/json"})))
        return self.thread

    # -- blocks

    @op
    def blocks(self) -> Steps[list[Block]]:
        return [_build(Block, b) for b in (yield self._call("GET", "blocks/"))["results"]]

    @op
    def put_block(self, name: str, *, value: str | None = None, expr: str | None = None,
                  placement: str | None = None, order: int | None = None) -> Steps[Block]:
        """Set a block's fixed value or live expr (value=None and no expr suppresses it)."""
        body: dict[str, Any] = {"expr": expr} if expr is not None else {"value": value}
        if placement is not None:
            body["placement"] = placement
        if order is not None:
            body["order"] = order
        return _build(Block, (yield self._call("PUT", f"blocks/{_segment(name)}/", json=body)))

    @op
    def delete_block(self, name: str) -> Steps[None]:
        yield self._call("DELETE", f"blocks/{_segment(name)}/")

    @op
    def block_versions(self, name: str) -> Steps[list[dict[str, Any]]]:
        """The block's kept versions, newest first (at most 500), deletions included (`deleted`)."""
        found = yield self._call("GET", f"blocks/{_segment(name)}/versions/")
        versions: list[dict[str, Any]] = found["results"]
        return versions

    @op
    def restore_block(self, name: str, version: int) -> Steps[Block]:
        """Make an earlier kept version the block's content again (undoes an edit or delete)."""
        path = f"blocks/{_segment(name)}/versions/{version}/restore/"
        return _build(Block, (yield self._call("POST", path)))

    # -- state

    @op
    def state(self) -> Steps[State]:
        return _state((yield self._call("GET", "state/")))

    def _write_state(self, method: str, state: Any, memory: Any, reason: str,
                     if_match: int | None, summary: str | None = None) -> Steps[State]:
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
        return _state((yield self._call(method, "state/", json=body, headers=headers,
                                        idempotent=if_match is None)))

    @op
    def put_state(self, state: dict[str, Any] | None = None, *, memory: list[dict[str, Any]] | None = None,
                  summary: str | None = None, reason: str = "",
                  if_match: int | None = None) -> Steps[State]:
        """Replace state, memory and/or summary. With if_match (a revision), a stale write
        raises StaleRevision and changes nothing; without, last write wins."""
        return (yield from self._write_state("PUT", state, memory, reason, if_match, summary))

    @op
    def patch_state(self, patch: dict[str, Any] | None = None, *, memory: list[dict[str, Any]] | None = None,
                    summary: str | None = None, reason: str = "",
                    if_match: int | None = None) -> Steps[State]:
        """Apply a JSON merge patch (RFC 7386: null removes a key) to the state."""
        return (yield from self._write_state("PATCH", patch, memory, reason, if_match, summary))

    @op
    def revisions(self) -> Steps[list[StateRevision]]:
        return [_build(StateRevision, r) for r in (yield from pages(self._path + "state/revisions/"))]

    @op
    def revision(self, revision: int) -> Steps[dict[str, Any]]:
        """One revision: {"document": the whole document then, "diff": RFC 6902 operations
        from the previous revision, "changed": the fields they touch, reason, actor, ...}."""
        found: dict[str, Any] = yield self._call("GET", f"state/revisions/{revision}/")
        return found

    @op
    def restore(self, revision: int, *, if_match: int | None = None) -> Steps[State]:
        """Bring back an earlier revision's whole document (state, memory, summary, clientai
        fields, system prompt, tools, framework namespaces), as a new revision."""
        headers = {"If-Match": f'"{if_match}"'} if if_match is not None else None
        return _state((yield self._call("POST", f"state/revisions/{revision}/restore/", headers=headers)))

    # -- clientai AgentContext

    @op
    def set_input(self, input_data: Any, *, timestamp: str | None = UNSET_TIME) -> Steps[State]:
        """clientai set_input: moves the previous interaction to history, stamped with
        `timestamp` (default: this process's local time with its offset; None: the server's)."""
        body: dict[str, Any] = {"input": input_data}
        if timestamp is not None:
            body["timestamp"] = local_now() if timestamp is UNSET_TIME else timestamp
        return _state((yield self._call("POST", "input/", json=body)))

    @op
    def set_step_result(self, step: str, result: Any) -> Steps[Any]:
        return (yield self._call("POST", "results/", json={"step": step, "result": result}))["result"]

    @op
    def get_step_result(self, step: str) -> Steps[Any]:
        """The current result of a step, or None when there is none (like clientai)."""
        if not step:  # no path segment for the empty name: read it from the state
            return (yield from ThreadOps.state.steps(self)).last_results.get(step)
        try:
            return (yield self._call("GET", f"results/{_segment(step)}/"))["result"]
        except NotFound:
            return None

    @op
    def increment_iteration(self) -> Steps[int]:
        iteration: int = (yield self._call("POST", "iteration/"))["iteration"]
        return iteration

    @op
    def set_max_history_size(self, size: int) -> Steps[State]:
        return _state((yield self._call("PUT", "max-history-size/", json={"size": size})))

    def _recent_history(self, n: int | None, raw: bool) -> Steps[str | list[dict[str, Any]]]:
        data = yield self._call("GET", "history/", params={"n": n, "raw": raw})
        history: str | list[dict[str, Any]] = data if raw else data["text"]
        return history

    @op
    def reset(self) -> Steps[State]:
        """clientai clear(): state, memory, results, inputs, iteration; history stays."""
        return _state((yield self._call("POST", "reset/")))

    @op
    def reset_all(self) -> Steps[State]:
        """clientai clear_all(): clear() and the conversation history."""
        return _state((yield self._call("POST", "reset-all/")))

    # -- AgentScope clear-context

    @op
    def clear_context(self) -> Steps[int]:
        """AgentScope clearContext: events and summary leave the working context; state stays.
        Returns how many events were cleared; `unclear()` takes it back."""
        cleared: int = (yield self._call("POST", "clear-context/"))["cleared"]
        return cleared

    @op
    def clears(self) -> Steps[list[Clear]]:
        """Every clear-context of this thread, oldest first (undone ones too)."""
        return [_build(Clear, c) for c in (yield from pages(self._path + "clears/"))]

    @op
    def unclear(self, clear_id: int | None = None) -> Steps[Clear]:
        """Undo a clear-context (by default the newest one not undone yet): its events come back
        into the working context and its summary with them (unless a newer one was written)."""
        if clear_id is None:
            pending = [c for c in (yield from ThreadOps.clears.steps(self)) if c.undone_at is None]
            if not pending:
                raise NotFound("This thread has no clear to undo.")
            clear_id = pending[-1].id
        return _build(Clear, (yield self._call("POST", f"clears/{clear_id}/undo/"))["clear"])

    # -- render, windows, peteos

    @op
    def context(self, *, max_tokens: int | None = None, strip_thinking: bool = False,
                format: str = "raw", on_oversize: str = "skip", record: bool = True,
                start_chunk: float | None = None, tools: list[dict[str, Any]] | None = None,
                ) -> Steps[Context]:
        """The model context: prefix blocks, summary, newest events that fit, suffix blocks.

        format: "raw", "openai" (Chat Completions messages) or "anthropic" (`system` plus
        Messages API turns). max_tokens defaults to the thread's model budget. By default the
        render is recorded and later LLM-call events carry its render_id; a read-only token
        gets the render unrecorded. start_chunk: the share of the history budget the render's
        start moves forward by (0 slides it turn by turn; None: the server's default). tools:
        the tool definitions the request will send, counted in the budget and the total; a
        call must have logged the same list before (`data.tools`), the server names it by hash.
        """
        params = {"max_tokens": max_tokens, "strip_thinking": strip_thinking, "format": format,
                  "on_oversize": on_oversize, "record": record, "start_chunk": start_chunk,
                  "tools_hash": tools_hash(tools) if tools else None}
        try:
            data = yield self._call("GET", "context/", params=params)
        except Forbidden:
            if not record:
                raise
            data = yield self._call("GET", "context/", params={**params, "record": False})
        self.last_render_id = data.get("render_id")
        return _context(data)

    @op
    def llm_call(self, seq: int) -> Steps[dict[str, Any]]:
        """What the LLM call logged at `seq` was sent: its render rebuilt, or its logged messages."""
        sent: dict[str, Any] = yield self._call("GET", f"llm-calls/{seq}/")
        return sent

    @op
    def model_settings(self) -> Steps[dict[str, Any]]:
        """model, context_window, reserve_output as set here, and `effective` after inheritance."""
        model: dict[str, Any] = yield self._call("GET", "model/")
        return model

    @op
    def set_model(self, /, **settings: Any) -> Steps[dict[str, Any]]:
        """Set model, context_window and/or reserve_output (None inherits)."""
        model: dict[str, Any] = yield self._call("PATCH", "model/", json=settings)
        return model

    @op
    def window(self, *, count: int | None = None, max_tokens: int | None = None) -> Steps[Window]:
        """peteos rolling window: the last `count` events, or those within `max_tokens`."""
        data = yield self._call("GET", "window/", params={"count": count, "max_tokens": max_tokens})
        return Window(events=[_event(e) for e in data["events"]], covers_all=data["covers_all"])

    def _fork(self, name: str, start_position: int | None, end_position: int | None,
              system_prompt: str | None, widen: bool = False) -> Steps[Thread]:
        return _build(Thread, (yield self._call("POST", "fork/", json={
            "name": name, "start_position": start_position, "end_position": end_position,
            "system_prompt": system_prompt, **_widen(widen)})))

    @op
    def delete_fork(self) -> Steps[None]:
        """Delete this thread, which must be a fork; the parent keeps every original. What the
        fork added after forking is deleted with it (not undoable)."""
        yield self._call("DELETE")

    @op
    def total_tokens(self) -> Steps[int]:
        total: int = (yield self._call("GET", "tokens/"))["total_tokens"]
        return total

    @op
    def export(self, format: str = "contextstore") -> Steps[dict[str, Any]]:
        """The whole thread as contextstore JSON, or its working context as peteos JSON."""
        exported: dict[str, Any] = yield self._call("GET", "export/", params={"format": format})
        return exported

    # -- runs and providers

    @op
    def runs(self) -> Steps[list[Run]]:
        return [_build(Run, r) for r in (yield from pages(self._path + "runs/"))]

    @op
    def provider_state(self, name: str) -> Steps[ProviderState | None]:
        """A context provider's serialized state on this thread, or None if never saved."""
        try:
            return _build(ProviderState, (yield self._call("GET", f"providers/{_segment(name)}/")))
        except NotFound:
            return None

    @op
    def put_provider_state(self, name: str, state: Any) -> Steps[ProviderState]:
        return _build(ProviderState, (yield self._call("PUT", f"providers/{_segment(name)}/",
                                                       json={"state": state})))

    # -- the sync protocol (framework adapters)

    @op
    def sync_load(self, namespace: str, *, format: str | None = None) -> Steps[SyncLoad]:
        """The working context as keyed items of `namespace`, with the revision to save on."""
        data = yield self._call("GET", "sync/", params={"namespace": namespace, "format": format})
        return SyncLoad(
            revision=data["revision"], state=data["state"], summary=data["summary"],
            document=data["document"],
            items=[SyncItem(i["key"], i["own"], i["digest"], _event(i["event"]))
                   for i in data["items"]], rendered=data.get("rendered"))

    @op
    def sync_save(self, /, namespace: str, *, items: list[dict[str, Any]] | None = None,
                  removed: list[str] | None = None, base_revision: int | None = None,
                  part_size: int = 500, part_bytes: int = 4_000_000,
                  **document_parts: Any) -> Steps[dict[str, Any]]:
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
            item_size = len(json.dumps(item, default=str))
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
            result = yield self._call("POST", "sync/", json=body, idempotent=True)
        return result


# ------------------------------------------------------------------------------- helpers

def _widen(widen: bool) -> dict[str, Any]:
    """A range request's `widen`, sent only when asked (servers before it refuse the field)."""
    return {"widen": True} if widen else {}


def tools_hash(tools: list[dict[str, Any]]) -> str:
    """A tool list's name on the server: the sha256 of its canonical JSON (sorted keys, no
    spaces), as the server keeps a logged call's `data.tools`."""
    text = json.dumps(tools, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


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


def _segment(name: str) -> str:
    """A name as one URL path segment: "?" and "#" (and the rest) percent-encoded. A "/" cannot
    be carried in a path segment at all (servers decode it before routing)."""
    return quote(name, safe="")
