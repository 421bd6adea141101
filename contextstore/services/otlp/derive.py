"""A trace's kept spans become a session's thread: its messages as events, once each, in
conversation order; each LLM span an LLMCallStart/LLMComplete pair whose logged messages are
exactly the span's input; tool spans, errors and exceptions as their events. Derivation reads
the whole trace every time, so the order spans arrive in does not matter, and appends only
what the thread does not hold yet (by client id), so running it again changes nothing.

A message's client id is its place in the conversation and its content (`otel:m:<index>:<digest>`):
every LLM span repeats the history, and each message is stored the first time it is seen.
A tool call and its result are named by the call's id (`otel:toolcall:<id>`,
`otel:toolresult:<id>`), whichever span (LLM or execute_tool) carried them first.

Session resolution (mapping.SESSION_KEYS): the best id any span of the trace names, else the
trace id. When a better id arrives later (ids often sit on the root span, which ends and is
exported last), the trace's events move: the session they went to, used by no other trace,
is deleted and the trace is derived again into the session its id names.
"""

import functools
import hashlib
import logging
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Min
from django.utils import timezone

from contextstore.db import rows_update
from contextstore.errors import Conflict, InvalidInput
from contextstore.eventspec import event_specs
from contextstore.llm_models import call_cost
from contextstore.models import AuditLog, Event, OtelLog, OtelSpan, OtelTrace, Run, Session, Thread, Workspace
from contextstore.otel import mapping
from contextstore.redaction import redact_events, use_workspace
from contextstore.services import history
from contextstore.services.common import Actor, audit_row, lock_thread
from contextstore.services.events import event_append_specs
from contextstore.services.renders import llm_call_texts, texts_keep
from contextstore.services.runs import run_finish
from contextstore.services.sessions import (
    session_delete,
    session_ensure,
    session_update,
    sessions_create_many,
    thread_ensure,
)
from contextstore.services.summaries import run_completed_check, summarization_check
from contextstore.sessionspec import check_session_names

logger = logging.getLogger(__name__)
STATUS_ERROR = 2


def _when(ns: int) -> str | None:
    if ns <= 0:
        return None
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat()


def _cid(*parts: str) -> str:
    text = ":".join(("otel", *parts))
    if len(text) <= 200:
        return text
    return "otel:h:" + hashlib.sha256(text.encode()).hexdigest()


class _Trace:
    """A trace's spans (and the log records naming them) with the answers derivation needs."""

    def __init__(self, spans: list[OtelSpan], logs: list[OtelLog]):
        self.trace_id = spans[0].trace_id
        self.spans = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
        self.by_id = {s.span_id: s for s in spans}
        self.logs: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for log in sorted(logs, key=lambda r: (r.time_ns, r.pk)):
            self.logs[log.span_id].append({"name": log.event_name, "attributes": log.attributes,
                                           "body": log.body, "time_ns": log.time_ns})

    def depth(self, span: OtelSpan) -> int:
        depth, seen = 0, set()
        while span.parent_span_id in self.by_id and span.span_id not in seen:
            seen.add(span.span_id)
            span = self.by_id[span.parent_span_id]
            depth += 1
        return depth

    def session_key(self) -> str | None:
        """The best session id any span (or its resource) names: the best level wins, then the
        span nearest the root, then the earliest."""
        found = []
        for span in self.spans:
            for attrs in (span.attributes, span.resource):
                hint = mapping.session_hint(attrs)
                if hint:
                    found.append((hint[0], self.depth(span), span.start_ns, hint[1]))
        return min(found)[3][:255] if found else None

    def first(self, keys: tuple[str, ...]) -> str:
        """The first of `keys` the spans name (nearest the root first, each span's attributes
        then its resource), else the log records (ADK puts `user.id` on those alone)."""
        for span in sorted(self.spans, key=self.depth):
            value = mapping.first_of(span.attributes, keys) or mapping.first_of(span.resource, keys)
            if value:
                return value
        for records in self.logs.values():
            for record in records:
                if value := mapping.first_of(record["attributes"] or {}, keys):
                    return value
        return ""

    def agent(self) -> str:
        name = self.first(mapping.AGENT_KEYS)
        if name:
            return name
        service = self.first(("service.name",))
        return "" if service.startswith("unknown_service") else service

    def provenance(self) -> dict[str, Any]:
        scopes = sorted({s.scope.get("name", "") for s in self.spans} - {""})
        return {"source": "opentelemetry", "service_name": self.first(("service.name",)),
                "scopes": scopes}

    def run_id(self, span: OtelSpan) -> str:
        """The nearest agent span at or above `span` (agent spans are runs), else the trace."""
        node: OtelSpan | None = span
        seen = set()
        while node is not None and node.span_id not in seen:
            seen.add(node.span_id)
            if mapping.is_agent_span(node.attributes, node.name):
                return node.span_id
            node = self.by_id.get(node.parent_span_id)
        return span.trace_id


def _text(parts: list[dict[str, Any]], kind: str = "text") -> str:
    return "\n".join(str(p.get("content", "")) for p in parts if p.get("type") == kind)


def message_events(message: mapping.Message, index: int, *, when: str | None, run_id: str,
                   span_id: str) -> list[dict[str, Any]]:
    """The events one normalised message becomes, each with its client id."""
    digest = mapping.message_digest(message)[:32]
    role, parts = message["role"], message.get("parts") or []
    base: dict[str, Any] = {"run_id": run_id, "occurred_at": when,
                            "data": {"otel": {"span_id": span_id}}}
    out: list[dict[str, Any]] = []
    reasoning = [p for p in parts if p.get("type") == "reasoning"]
    if reasoning:
        out.append({**base, "type": "Reasoning", "role": "assistant", "content": "",
                    "parts": [{"type": "thinking", "thinking": p["content"]} for p in reasoning],
                    "client_id": _cid("m", str(index), digest, "r")})
    plain = [p for p in parts if p.get("type") not in ("reasoning", "tool_call", "tool_call_response")]
    if plain:
        media = [p for p in plain if p.get("type") != "text"]
        event = {**base, "type": "Message", "content": _text(plain),
                 "role": role if role in ("system", "user", "assistant") else "user",
                 "client_id": _cid("m", str(index), digest)}
        if media:
            event["parts"] = plain
        out.append(event)
    for k, part in enumerate(p for p in parts if p.get("type") == "tool_call"):
        call_id = part.get("id") or ""
        out.append({**base, "type": "ToolCall", "role": "assistant", "call_id": call_id[:200],
                    "content": f"Calling {part.get('name', '')}",
                    "parts": [{"type": "tool_call", "id": call_id, "name": part.get("name", ""),
                               "arguments": part.get("arguments", {})}],
                    "client_id": (_cid("toolcall", call_id) if call_id
                                  else _cid("m", str(index), digest, f"c{k}"))})
    for k, part in enumerate(p for p in parts if p.get("type") == "tool_call_response"):
        call_id = part.get("id") or ""
        out.append({**base, "type": "ToolResult", "role": "tool", "call_id": call_id[:200],
                    "content": str(part.get("response", "")),
                    "data": {"tool_call_id": call_id, "otel": {"span_id": span_id}},
                    "client_id": (_cid("toolresult", call_id) if call_id
                                  else _cid("m", str(index), digest, f"t{k}"))})
    return out


def _call_events(span: OtelSpan, call: mapping.LLMCall, run_id: str) -> list[dict[str, Any]]:
    start, end = _when(span.start_ns), _when(span.end_ns)
    otel = {"trace_id": span.trace_id, "span_id": span.span_id, "name": span.name,
            "scope": span.scope.get("name", "")}
    events: list[dict[str, Any]] = []
    for index, message in enumerate(call.inputs):
        events += message_events(message, index, when=start, run_id=run_id, span_id=span.span_id)
    start_data: dict[str, Any] = {"model": call.model or call.response_model, "provider": call.provider,
                                  "messages": call.inputs, "otel": otel}
    if call.tools is not None:
        start_data["tools"] = call.tools
    if call.params:
        start_data["params"] = call.params
    if call.unmapped:
        start_data["attributes"] = call.unmapped
    events.append({"type": "LLMCallStart", "run_id": run_id, "call_id": span.span_id,
                   "occurred_at": start, "data": start_data,
                   "client_id": _cid("call", span.span_id, "start")})
    for k, message in enumerate(call.outputs):
        events += message_events(message, len(call.inputs) + k, when=end, run_id=run_id,
                                 span_id=span.span_id)
    done: dict[str, Any] = {"model": call.response_model or call.model, "provider": call.provider,
                            **call.usage, "render_id": None, "otel": otel}
    if call.finish_reasons:
        done["finish_reasons"] = call.finish_reasons
        done["finish_reason"] = call.finish_reasons[0]
    if call.response_id:
        done["response_id"] = call.response_id
    if call.cost is not None:
        done["cost"] = call.cost
    elif (priced := call_cost(done["model"], call.usage)) is not None:
        done["cost"], done["cost_source"] = float(priced), "list price"
    if span.status_code == STATUS_ERROR:
        done["error"] = span.status_message or "error"
    events.append({"type": "LLMComplete", "run_id": run_id, "call_id": span.span_id,
                   "occurred_at": end, "data": done, "client_id": _cid("call", span.span_id, "end")})
    return events


def _tool_events(span: OtelSpan, found: tuple[str, str, Any, Any], run_id: str) -> list[dict[str, Any]]:
    call_id, name, arguments, result = found
    if not call_id:
        call_id = span.span_id
    message = {"role": "assistant", "parts": [mapping.tool_call(call_id, name, arguments)]}
    events = message_events(message, 0, when=_when(span.start_ns), run_id=run_id, span_id=span.span_id)
    if result is not None:
        reply = {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id,
                                            "response": result if isinstance(result, str) else str(result)}]}
        events += message_events(reply, 0, when=_when(span.end_ns), run_id=run_id, span_id=span.span_id)
    return events


def _error_events(span: OtelSpan, run_id: str) -> list[dict[str, Any]]:
    events = []
    for k, event in enumerate(span.events or ()):
        if event.get("name") != "exception":
            continue
        attrs = event.get("attributes") or {}
        text = ": ".join(str(attrs[key]) for key in ("exception.type", "exception.message") if attrs.get(key))
        events.append({"type": "Error", "role": "system", "run_id": run_id, "content": text or "exception",
                       "occurred_at": _when(event.get("time_ns") or span.end_ns),
                       "data": {"otel": {"span_id": span.span_id, "name": span.name}, "attributes": attrs},
                       "client_id": _cid("exception", span.span_id, str(k))})
    if span.status_code == STATUS_ERROR and not events:
        events.append({"type": "Error", "role": "system", "run_id": run_id,
                       "content": span.status_message or f"{span.name} failed",
                       "occurred_at": _when(span.end_ns),
                       "data": {"otel": {"span_id": span.span_id, "name": span.name}},
                       "client_id": _cid("error", span.span_id)})
    return events


def _llm_calls(trace: _Trace) -> dict[str, mapping.LLMCall]:
    """The call each LLM span stands for, by span id. LLM spans nested in one another are one
    call (ADK's `call_llm` holds its `generate_content`): the outermost that carries messages
    stands for it, and what it lacks (model, provider, usage, cost) comes from the others."""
    nested: dict[str, list[tuple[OtelSpan, mapping.LLMCall]]] = defaultdict(list)
    for span in sorted(trace.spans, key=trace.depth):
        if not mapping.is_llm_span(span.attributes, span.name):
            continue
        outer, node, seen = span, trace.by_id.get(span.parent_span_id), {span.span_id}
        while node is not None and node.span_id not in seen:
            seen.add(node.span_id)
            if mapping.is_llm_span(node.attributes, node.name):
                outer = node
            node = trace.by_id.get(node.parent_span_id)
        content = list(span.events or ()) + trace.logs.get(span.span_id, [])
        nested[outer.span_id].append((span, mapping.llm_call(span.attributes, content)))
    calls = {}
    for group in nested.values():
        span, call = next(((s, c) for s, c in group if c.inputs or c.outputs), group[0])
        for _, other in group:
            call.model = call.model or other.model
            call.response_model = call.response_model or other.response_model
            call.provider = call.provider or other.provider
            call.usage = {**other.usage, **call.usage}
            call.cost = other.cost if call.cost is None else call.cost
        calls[span.span_id] = call
    return calls


def trace_events(trace: _Trace) -> list[dict[str, Any]]:
    """Every event the trace makes, in order, each with its client id (repeats included)."""
    events: list[dict[str, Any]] = []
    calls = _llm_calls(trace)
    # Calls the LLM spans carried, by what they ask: a tool span naming no call id is the
    # first of them not yet claimed by another.
    carried: dict[str, list[str]] = defaultdict(list)
    claimed: set[str] = set()
    for call in (calls[s.span_id] for s in trace.spans if s.span_id in calls):
        for part in (p for m in call.inputs + call.outputs for p in m.get("parts") or ()):
            if part.get("type") == "tool_call" and part.get("id"):
                key = mapping.call_key(part.get("name"), part.get("arguments"))
                if part["id"] not in carried[key]:
                    carried[key].append(part["id"])
    for span in trace.spans:
        run_id = trace.run_id(span)
        if span.span_id in calls:
            events += _call_events(span, calls[span.span_id], run_id)
        elif mapping.is_llm_span(span.attributes, span.name):
            pass  # a span of a call another span stands for
        elif found := mapping.tool_span(span.attributes):
            key = mapping.call_key(found[1], found[2])
            if not found[0] and (free := [i for i in carried[key] if i not in claimed]):
                claimed.add(free[0])
                found = (free[0], *found[1:])
            tool, errors = _tool_events(span, found, run_id), _error_events(span, run_id)
            results = [e for e in tool if e["type"] == "ToolResult"]
            if errors and results:
                # The tool's failure is its result's: one failed ToolResult (`data.error`, which
                # `toolcalls.event_failed` reads), not a result and an Error counted twice.
                results[-1]["data"]["error"] = "; ".join(e["content"] for e in errors)
                errors = []
            events += tool + errors
            continue
        events += _error_events(span, run_id)
    return events


def _move_from(ot: OtelTrace, group: list[int], actor: Actor) -> None:
    """A trace's events leave the session they went to: that session is deleted when no trace
    outside `group` (OtelTrace ids) went there (it was the trace's own, named by its trace id or
    by an id now outranked)."""
    old = Session.objects.filter(threads=ot.thread_id).first()
    if old is None:
        return
    if OtelTrace.objects.filter(thread__session=old).exclude(pk__in=group).exists():
        logger.warning("otel trace %s moved; its events stay in session %s too", ot.trace_id, old.pk)
    else:
        session_delete(session=old, actor=actor)


def _session_derive(*, workspace: Workspace, key: str, user: str, traces: list[_Trace],
                    rows: list[OtelTrace], actor: Actor, made: Thread | None = None,
                    path: str = "fast") -> Thread:
    """Derive (again) the traces that name one session, in the order they began (their
    OtelTrace `rows` locked by the caller): one append of what the thread lacks. `made`: the
    session's main thread, made for it in this pass (sessions_create_many), which holds
    nothing yet. `path`: event_append_specs' (the caller reruns "checked" on history.Skipped)."""
    with transaction.atomic():
        group = [ot.pk for ot in rows]
        agent = next((a for t in traces if (a := t.agent())), "")[:200]
        check_session_names(key=key, user_id=user, agent=agent)  # the spans' names (NUL)
        if made is None:
            for ot in rows:
                named = (ot.thread.session.key, ot.thread.session.user_id) if ot.thread else None
                if named is not None and named != (key, user):
                    _move_from(ot, group, actor)
                    ot.thread = None
            session, _ = session_ensure(workspace=workspace, key=key, user_id=user, agent=agent, actor=actor)
            if "otel" not in session.metadata:
                session = session_update(session=session, actor=actor,
                                         metadata={**session.metadata, "otel": traces[0].provenance()})
            made = thread_ensure(session=session, actor=actor)[0]
            held_already = True
        else:
            held_already = False
        thread = lock_thread(made, history_only=True)
        events = [e for t in traces for e in trace_events(t)]
        held = _held(thread, events) if held_already else set()
        if _out_of_order(events, held) and _owned(group, thread, len(held)):
            # Spans came late that belong before events already stored (a parent or an
            # earlier call): the session, these traces' own, is written again in order.
            session_delete(session=thread.session, actor=actor)
            session, _ = session_ensure(workspace=workspace, key=key, user_id=user, agent=agent,
                                        metadata={"otel": traces[0].provenance()}, actor=actor)
            thread = lock_thread(thread_ensure(session=session, actor=actor)[0], history_only=True)
            held = set()
        _append_new(thread, events, held, actor, path)
        _runs_end(thread, traces, actor)
        now = timezone.now()
        for ot in rows:
            ot.thread, ot.session_key, ot.mapped_at = thread, key, now
    return thread


def _held(thread: Thread, events: list[dict[str, Any]]) -> set[str]:
    """The client ids among `events` the thread holds already."""
    wanted = list(dict.fromkeys(e["client_id"] for e in events))
    held: set[str] = set()
    for i in range(0, len(wanted), 900):
        held.update(c for c in Event.objects.filter(thread=thread, client_id__in=wanted[i:i + 900])
                    .values_list("client_id", flat=True) if c)
    return held


def _out_of_order(events: list[dict[str, Any]], held: set[str]) -> bool:
    """Whether an event not held yet comes before one that is (appending would misplace it)."""
    missing = False
    for event in events:
        if event["client_id"] not in held:
            missing = True
        elif missing:
            return True
    return False


def _owned(group: list[int], thread: Thread, held: int) -> bool:
    """Whether the thread's session is these traces' alone: one thread, holding only their events."""
    return (thread.event_count == held and thread.session.thread_count == 1
            and not OtelTrace.objects.filter(thread__session=thread.session_id)
            .exclude(pk__in=group).exists())


def _fitted(event: dict[str, Any]) -> dict[str, Any]:
    """An event whose content is over the event limit keeps its first part (the whole text stays
    in the raw span, and in a call's logged messages); one huge message must not keep the rest
    of its session from being derived."""
    limit = settings.CONTEXTSTORE["MAX_EVENT_CONTENT_BYTES"]
    content = event.get("content") or ""
    if len(content) * 4 <= limit or len(encoded := content.encode()) <= limit:
        return event
    data = dict(event.get("data") or {})
    data["truncated_from_bytes"] = len(encoded)
    return {**event, "content": encoded[:limit - 64].decode(errors="ignore") + " … [truncated]",
            "data": data}


def _fresh(events: Iterable[dict[str, Any]], held: set[str] | None = None) -> list[dict[str, Any]]:
    """The events not `held` yet, the first of each client id, fitted to the event limit."""
    held = set(held or ())
    fresh = []
    for event in events:
        if event["client_id"] not in held:
            held.add(event["client_id"])
            fresh.append(_fitted({k: v for k, v in event.items() if v is not None}))
    return fresh


def _append_new(thread: Thread, events: list[dict[str, Any]], held: set[str], actor: Actor,
                path: str) -> None:
    """Append the events the thread does not hold yet (the first of each client id), as one
    batch under the caller's lock of the thread (validated MAX_EVENTS_PER_BATCH at a time)."""
    fresh = _fresh(events, held)
    if not fresh:
        return
    fresh = redact_events(use_workspace(thread.workspace), fresh)  # the pass's workspace, cached
    step = settings.CONTEXTSTORE["MAX_EVENTS_PER_BATCH"]
    specs = [spec for i in range(0, len(fresh), step) for spec in event_specs(fresh[i:i + step])]
    if connection.vendor != "postgresql":
        path = "checked"
    event_append_specs(thread=thread, specs=specs, actor=actor, locked=True, path=path)


def _dt(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, UTC)


def _run_states(traces: list[_Trace]) -> dict[str, dict[str, Any]]:
    """A run from OTLP is its agent span (or, for events under none, the trace's root span): it
    starts when that span starts and ends when it ends (a span is exported once it ended),
    failed when its status is ERROR. Until the span arrives the run is running, started at the
    first span seen of it. By run id: {"status", "error", "started_at", "ended_at"} of a run
    whose span ended, else {"started_at"} (absent when no span of it has a start time)."""
    spans: dict[str, OtelSpan | None] = {}
    first: dict[str, int] = {}
    for trace in traces:
        roots = [s for s in trace.spans if not s.parent_span_id]
        for span in trace.spans:
            run_id = trace.run_id(span)
            if span.start_ns > 0:
                first[run_id] = min(first.get(run_id, span.start_ns), span.start_ns)
            if spans.get(run_id) is None:
                root = roots[0] if run_id == trace.trace_id and roots else None
                spans[run_id] = trace.by_id.get(run_id, root)
    states: dict[str, dict[str, Any]] = {}
    for run_id, own in spans.items():
        if own is None or own.end_ns <= 0:
            states[run_id] = {"started_at": _dt(first[run_id])} if run_id in first else {}
            continue
        failed = own.status_code == STATUS_ERROR
        states[run_id] = {"status": Run.Status.FAILED if failed else Run.Status.COMPLETED,
                          "error": (own.status_message or "error") if failed else "",
                          "started_at": _dt(own.start_ns) if own.start_ns > 0 else None,
                          "ended_at": _dt(max(own.end_ns, own.start_ns))}
    return states


def _runs_end(thread: Thread, traces: list[_Trace], actor: Actor) -> None:
    """The runs of the thread's traces take their spans' state (_run_states)."""
    states = _run_states(traces)
    for run in Run.objects.filter(thread=thread, run_id__in=list(states)):
        state = states[run.run_id]
        if "status" not in state:
            if run.status == Run.Status.RUNNING and "started_at" in state:
                Run.objects.filter(pk=run.pk).update(started_at=state["started_at"])
            continue
        try:
            run_finish(run=run, actor=actor, **state)
        except Conflict:  # ended already otherwise (an agent or a person finished it): kept
            pass


def _sessions_derive_fresh(workspace: Workspace, groups: dict[tuple[str, str], list[_Trace]],
                           made: dict[tuple[str, str], Thread], rows: dict[str, OtelTrace],
                           actor: Actor) -> set[tuple[str, str]]:
    """Derive the sessions made in this pass (their threads hold nothing yet) all at once: their
    events in one insert across threads (history.events_add_many: COPY on PostgreSQL), the texts
    their calls logged kept in one statement, their runs made with their counters and finished
    together, one audit insert. Returns the sessions derived; one whose events cannot be made
    (a mapping bug, an event refused) is left to _session_derive, which names it failed, and so
    is every one of them when the writes fail otherwise than by a database outage."""
    planned: list[tuple[tuple[str, str], Thread, list[_Trace], list[Any]]] = []
    texts: list[str] = []
    rules = use_workspace(workspace)
    for key, traces in sorted(groups.items()):
        traces.sort(key=lambda t: (t.spans[0].start_ns, t.trace_id))
        try:
            fresh = redact_events(rules, _fresh(e for t in traces for e in trace_events(t)))
            step = settings.CONTEXTSTORE["MAX_EVENTS_PER_BATCH"]
            specs = [spec for i in range(0, len(fresh), step) for spec in event_specs(fresh[i:i + step])]
            calls, logged = llm_call_texts(workspace_id=workspace.pk, specs=specs)
        except (OperationalError, InterfaceError):
            raise
        except Exception:  # noqa: BLE001 - _session_derive derives it alone, and logs why not
            continue
        planned.append((key, made[key], traces, calls))
        texts += logged
    if not planned:
        return set()
    now = timezone.now()
    try:
        with transaction.atomic():
            texts_keep(workspace_id=workspace.pk, texts=list(dict.fromkeys(texts)))
            for _, thread, _, _ in planned:
                Thread.workspace.field.set_cached_value(thread, workspace)
            added = history.events_add_many(batches=[(thread, specs) for _, thread, _, specs in planned],
                                            now=now)
            audits = [audit_row(actor=actor, action="events.append", target=events[0].thread,
                                workspace=workspace, count=len(events), first_seq=events[0].seq,
                                last_seq=events[-1].seq) for events in added]
            ended: list[Run] = []
            by_thread: dict[int, dict[str, Run]] = defaultdict(dict)
            for events in added:
                for event in events:
                    if event.run is not None:
                        by_thread[event.thread_id][event.run.run_id] = event.run
            started: list[Run] = []
            for _, thread, traces, _ in planned:
                for run_id, state in _run_states(traces).items():
                    run = by_thread[thread.pk].get(run_id)
                    if run is None or not state:
                        continue
                    for name, value in state.items():
                        if value is not None:
                            setattr(run, name, value)
                    (ended if "status" in state else started).append(run)
                    if "status" in state:
                        audits.append(audit_row(actor=actor, action=f"run.{run.status}", target=run,
                                                workspace=workspace, run_id=run.run_id))
            rows_update(Run, [(run.pk, {"status": run.status, "error": run.error,
                                        "started_at": run.started_at, "ended_at": run.ended_at}, {})
                              for run in ended])
            rows_update(Run, [(run.pk, {"started_at": run.started_at}, {}) for run in started])
            AuditLog.objects.bulk_create(audits)
    except (OperationalError, InterfaceError):
        raise
    except Exception:  # noqa: BLE001 - each is derived alone below, which logs its own failure
        logger.exception("otel sessions could not be derived together; deriving them one by one")
        return set()
    for (session_key, _), thread, traces, _ in planned:
        summarization_check(thread=thread)
        for trace in traces:
            ot = rows[trace.trace_id]
            ot.thread, ot.session_key, ot.mapped_at = thread, session_key, now
    for run in ended:
        if run.status == Run.Status.COMPLETED:
            run_completed_check(run=run)
    return {key for key, _, _, _ in planned}


def _names_fit(key: str, user: str, agent: str) -> bool:
    try:
        check_session_names(key=key, user_id=user, agent=agent)
    except InvalidInput:
        return False
    return True


def _sessions_made(workspace: Workspace, groups: dict[tuple[str, str], list[_Trace]],
                   rows: dict[str, OtelTrace], actor: Actor) -> dict[tuple[str, str], Thread]:
    """The sessions of this pass's new conversations (traces derived for the first time, whose
    session does not exist yet), made together with their threads in a few statements; the
    rest go through session_ensure one by one."""
    fresh = {(key, user): traces for (key, user), traces in groups.items()
             if all(rows[t.trace_id].thread_id is None for t in traces)}
    existing: set[tuple[str, str]] = set()
    keys = sorted({key for key, _ in fresh})
    for i in range(0, len(keys), 500):
        existing |= set(Session.objects.filter(workspace=workspace, app="", key__in=keys[i:i + 500])
                        .values_list("key", "user_id"))
    new = [(key, user, next((a for t in traces if (a := t.agent())), "")[:200],
            {"otel": traces[0].provenance()})
           for (key, user), traces in sorted(fresh.items()) if (key, user) not in existing]
    # names a session cannot hold (NUL) are left to _session_derive, which refuses them alone
    new = [(key, user, agent, metadata) for key, user, agent, metadata in new
           if _names_fit(key, user, agent)]
    return sessions_create_many(workspace=workspace, new=new, actor=actor) if len(new) > 1 else {}


class Derived(NamedTuple):
    done: int  # traces derived
    failed: list[str]  # trace ids whose session's derivation raised (with `safely`)


def traces_derive(*, workspace: Workspace, trace_ids: list[str], actor: Actor,
                  safely: bool = False) -> Derived:
    """Derive the traces (those with a span yet: log records wait for theirs), grouped by the
    session each resolves to. `safely`: a bug in one session's mapping is logged, its traces
    are named in `failed`, and the rest go on (the spans are kept and derived again later); a
    database outage still propagates, so the caller retries."""
    trace_ids = sorted(set(trace_ids))  # every transaction takes the rows in one order
    use_workspace(workspace)  # the sessions and events derived, under the workspace's rules
    done, failed = 0, []
    with transaction.atomic():
        OtelTrace.objects.bulk_create([OtelTrace(workspace=workspace, trace_id=t) for t in trace_ids],
                                      ignore_conflicts=True)
        rows: dict[str, OtelTrace] = {}
        spans: dict[str, list[OtelSpan]] = defaultdict(list)
        logs: dict[str, list[OtelLog]] = defaultdict(list)
        for i in range(0, len(trace_ids), 500):
            chunk = trace_ids[i:i + 500]
            # No select_related: a row locked after waiting is its newest version, but rows
            # joined to it come from the statement's snapshot, so a thread another derivation
            # just made would read as NULL and its session be left behind; `ot.thread` is
            # read afresh, after the lock.
            rows.update((ot.trace_id, ot) for ot in OtelTrace.objects.select_for_update(of=("self",))
                        .filter(workspace=workspace, trace_id__in=chunk).order_by("trace_id"))
            # Read under the traces' locks: a derivation that waited for another sees every
            # span stored before it began, so the last one to run derives from them all.
            for span in OtelSpan.objects.filter(workspace=workspace, trace_id__in=chunk):
                spans[span.trace_id].append(span)
            for log in OtelLog.objects.filter(workspace=workspace, trace_id__in=chunk):
                logs[log.trace_id].append(log)
        groups: dict[tuple[str, str], list[_Trace]] = defaultdict(list)
        for trace_id in trace_ids:
            if spans[trace_id]:
                trace = _Trace(spans[trace_id], logs[trace_id])
                key = trace.session_key() or trace_id
                groups[(key, trace.first(mapping.USER_KEYS)[:255])].append(trace)
        made = _sessions_made(workspace, groups, rows, actor)
        together = _sessions_derive_fresh(workspace, {k: g for k, g in groups.items() if k in made},
                                          made, rows, actor)
        done += sum(len(groups[k]) for k in together)
        for (key, user), traces in sorted(groups.items()):
            if (key, user) in together:
                continue
            traces.sort(key=lambda t: (t.spans[0].start_ns, t.trace_id))
            group_rows = [rows[t.trace_id] for t in traces]
            derive = functools.partial(_session_derive, workspace=workspace, key=key, user=user,
                                       traces=traces, rows=group_rows, actor=actor,
                                       made=made.get((key, user)))
            try:
                try:
                    derive()
                except history.Skipped:  # an event stored meanwhile: the append reads them first
                    for ot in group_rows:
                        ot.refresh_from_db()
                    derive(path="checked")
                done += len(traces)
            except (OperationalError, InterfaceError):
                raise
            except Exception:
                if not safely:
                    raise
                logger.exception("otel traces %s could not be derived; their spans are kept",
                                 [t.trace_id for t in traces])
                failed += [t.trace_id for t in traces]
                for t in traces:
                    rows.pop(t.trace_id, None)
        rows_update(OtelTrace, [(ot.pk, {"thread": ot.thread_id, "session_key": ot.session_key,
                                         "mapped_at": ot.mapped_at}, {})
                                for ot in rows.values() if ot.mapped_at is not None])
    return Derived(done, failed)


def sessions_remap(*, workspace: Workspace, actor: Actor,
                   trace_ids: list[str] | None = None) -> dict[str, int]:
    """Derive traces again from their kept spans, after the mapping changed (`otel_remap`).

    A session that holds only derived events (every event's client id is ours) is deleted and
    all its traces derived again in the order they began, so changed events are written anew;
    a session people or agents also wrote to keeps its events and gets only what is missing.
    """
    traces = OtelTrace.objects.filter(workspace=workspace)
    if trace_ids is not None:
        traces = traces.filter(trace_id__in=trace_ids)
    mapped = set(traces.values_list("trace_id", flat=True))
    if trace_ids is None:  # traces whose spans were kept but never derived (a mapping bug)
        mapped |= set(OtelSpan.objects.filter(workspace=workspace).values_list("trace_id", flat=True))
    sessions = set(OtelTrace.objects.filter(workspace=workspace, trace_id__in=mapped, thread__isnull=False)
                   .values_list("thread__session", flat=True))
    rebuilt = 0
    for session_id in sorted(sessions):
        session = Session.objects.filter(pk=session_id).first()
        if session is None:
            continue
        ours = Event.objects.filter(thread__session=session, client_id__startswith="otel:").count()
        if ours == session.event_count:
            # every trace of this session goes again, not only those asked for
            mapped |= set(OtelTrace.objects.filter(thread__session=session)
                          .values_list("trace_id", flat=True))
            session_delete(session=session, actor=actor)
            rebuilt += 1
    first_start = {row["trace_id"]: row["start"] for row in OtelSpan.objects.filter(
        workspace=workspace, trace_id__in=mapped).values("trace_id").annotate(start=Min("start_ns"))}
    ordered = sorted(mapped, key=lambda t: (first_start.get(t, 0), t))
    derived = traces_derive(workspace=workspace, trace_ids=ordered, actor=actor).done
    return {"traces": derived, "sessions_rebuilt": rebuilt}
