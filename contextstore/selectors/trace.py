"""A run's trace as a tree: agent → sub-agent → LLM call / tool call, whatever way it came in.

From OpenTelemetry (the thread's session was derived from OTLP): the run's spans, nested by
their parent span ids (selectors/spans.run_spans, at most spans.MAX_SPANS), each named by
its kind from a few GenAI attributes read in the query (not the whole attribute map, which
holds conversations): its times are the span's own start and end.

Recorded through the API: the run, its LLM calls and tool calls (selectors/waterfall, from
the events' own times), and its sub-agent runs, nested: a run is a sub-agent of the run its
`BeforeAgentCall` event names in `data.parent_run_id`. These are read through the
(thread, type, seq) index; at most MAX_RUNS runs, MAX_NODES nodes in all.

A node is opened lazily (trace_node): one span's attributes and events, one event's data and
the events of its call, one run's fields; the tree itself reads none of them.
"""

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.db.models import JSONField, Q
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from contextstore.models import Event, OtelLog, OtelSpan, OtelTrace, Run, Thread
from contextstore.otel import mapping
from contextstore.selectors.calls import CALL_START, call_end_of, tool_pairs
from contextstore.selectors.spans import MAX_SPANS, STATUS_ERROR, run_spans
from contextstore.selectors.waterfall import run_waterfall

MAX_RUNS = 50  # sub-agent runs under one run (API-recorded)
MAX_AGENT_CALLS = 5000  # a thread's BeforeAgentCall/AfterAgentCall events read to nest them
MAX_NODES = 2000  # nodes in one tree; the page says when a tree was cut
PAGE_NODES = 200  # nodes shown at once (and whose kind is looked up); the rest a page further
NODE_EVENTS = 50  # events shown in an opened node
TOOL_WINDOW = 200  # ToolCall/ToolResult rows after a tool call looked at for its results
# The attributes a span's kind is told by (mapping.is_agent_span, is_llm_span, tool_span).
KIND_KEYS = (
    "gen_ai.operation.name",
    "openinference.span.kind",
    "llm.request.type",
    "gen_ai.request.model",
    "gen_ai.agent.name",
    "gen_ai.tool.name",
)


@dataclass
class Node:
    key: str  # what opens it: "span:<id>", "event:<seq>", "run:<pk>"
    kind: str  # "agent", "llm", "tool" or "span"
    name: str
    depth: int
    start: datetime | None
    end: datetime | None
    failed: bool = False
    status: str = ""  # a run's status
    note: str = ""  # why it failed: the span's status message, the run's error
    current: bool = False  # the span of the run the page is about
    offset_ms: float = 0.0  # from the tree's first start
    left: float = 0.0  # percent of the tree's time
    width: float = 0.0

    @property
    def duration_ms(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return max((self.end - self.start).total_seconds() * 1000, 0.0)

    @property
    def indent(self) -> int:
        return min(self.depth, 8)


@dataclass
class Tree:
    source: str  # "otel" or "api"
    nodes: list[Node] = field(default_factory=list)
    truncated: bool = False  # more spans, runs or nodes than were read
    total_ms: float | None = None
    count: int = 0  # nodes in the tree; `nodes` holds a page of them
    offset: int = 0
    next_offset: int | None = None
    previous_offset: int | None = None

    @property
    def last_shown(self) -> int:  # the last node's number on this page, from 1
        return self.offset + len(self.nodes)


def _dt(ns: int) -> datetime | None:
    return datetime.fromtimestamp(ns / 1e9, UTC) if ns > 0 else None


def _span_kind(attrs: dict[str, Any], name: str) -> str:
    if mapping.is_agent_span(attrs, name):
        return "agent"
    if mapping.is_llm_span(attrs, name):
        return "llm"
    if mapping.tool_span(attrs) is not None:
        return "tool"
    return "span"


def _otel_tree(thread: Thread, run_id: str) -> Tree:
    """The whole trace the run is part of, from its root: a sub-agent's run shows where it ran
    (an agent span that logged nothing of its own has no run, so no page of its own)."""
    trace_id = run_id
    if len(run_id) != 32:
        traces = OtelTrace.objects.filter(workspace_id=thread.workspace_id, thread=thread).values("trace_id")
        found = OtelSpan.objects.filter(workspace_id=thread.workspace_id, span_id=run_id, trace_id__in=traces)
        trace_id = found.values_list("trace_id", flat=True).first() or ""
    rows = run_spans(thread=thread, run_id=trace_id) if trace_id else []
    nodes = [
        Node(
            key=f"span:{r.span.span_id}",
            kind="span",  # told for the nodes of the page shown (_span_kinds)
            name=r.span.name,
            depth=r.depth,
            start=_dt(r.span.start_ns),
            end=_dt(r.span.end_ns),
            failed=r.failed,
            note=r.span.status_message if r.failed else "",
            current=r.span.span_id == run_id,
        )
        for r in rows[:MAX_NODES]
    ]
    return Tree("otel", nodes, truncated=len(rows) >= MAX_SPANS or len(rows) > MAX_NODES)


def _span_kinds(thread: Thread, nodes: list[Node]) -> None:
    """Each span node's kind. What derivation made of a span tells most without reading its
    attributes (an LLM span's can hold a whole conversation): a run is an agent span, an
    LLMCallStart's call_id is its LLM span. The rest are told by a few attributes read in
    the query."""
    ids = {n.key[5:]: n for n in nodes}
    for run_id in Run.objects.filter(thread=thread, run_id__in=list(ids)).values_list("run_id", flat=True):
        ids.pop(run_id).kind = "agent"
    for call_id in Event.objects.filter(thread=thread, type=CALL_START, call_id__in=list(ids)).values_list(
        "call_id", flat=True
    ):
        if call_id in ids:
            ids.pop(call_id).kind = "llm"
    if not ids:
        return
    traces = OtelTrace.objects.filter(workspace_id=thread.workspace_id, thread=thread).values("trace_id")
    # attributes is JSON stored as text (fields.OrderedJSONField): read as JSON in the query
    attributes = Cast("attributes", JSONField())
    annotations = {f"k{i}": KeyTextTransform(key, attributes) for i, key in enumerate(KIND_KEYS)}
    for row in (
        OtelSpan.objects.filter(workspace_id=thread.workspace_id, trace_id__in=traces, span_id__in=list(ids))
        .annotate(**annotations)
        .values("span_id", "name", *annotations)
    ):
        attrs = {key: row[f"k{i}"] for i, key in enumerate(KIND_KEYS) if row[f"k{i}"] is not None}
        if (node := ids.get(row["span_id"])) is not None:
            node.kind = _span_kind(attrs, row["name"])


class AgentCalls(NamedTuple):
    children: dict[str, list[str]]  # sub-agent run ids by parent run id, under the root
    opened: dict[str, Event]  # each run's first BeforeAgentCall: its start as the agent logged it
    closed: dict[str, Event]  # each run's last AfterAgentCall: its end
    truncated: bool


def _agent_calls(thread: Thread, root: str) -> AgentCalls:
    """The sub-agent runs under `root` (children by parent run id, breadth first, at most
    MAX_RUNS), from the thread's agent-call events (at most MAX_AGENT_CALLS of them)."""
    opened: dict[str, Event] = {}
    closed: dict[str, Event] = {}
    parents: dict[str, str] = {}
    marks = list(
        Event.objects.filter(thread=thread, type__in=("BeforeAgentCall", "AfterAgentCall"), run__isnull=False)
        .select_related("run")
        .only("seq", "type", "occurred_at", "data", "run__run_id")
        .order_by("seq")[: MAX_AGENT_CALLS + 1]
    )
    for e in marks[:MAX_AGENT_CALLS]:
        if e.run is None:
            continue
        if e.type == "AfterAgentCall":
            closed[e.run.run_id] = e
            continue
        if e.run.run_id in opened:
            continue
        opened[e.run.run_id] = e
        parent = e.data.get("parent_run_id") if isinstance(e.data, dict) else None
        if isinstance(parent, str) and parent and parent != e.run.run_id:
            parents[e.run.run_id] = parent
    children: dict[str, list[str]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    kept: dict[str, list[str]] = {}
    queue, seen, truncated = [root], {root}, len(marks) > MAX_AGENT_CALLS
    while queue:
        run_id = queue.pop(0)
        for child in children.get(run_id, []):
            if child in seen:
                continue
            if len(seen) > MAX_RUNS:
                truncated = True
                break
            seen.add(child)
            kept.setdefault(run_id, []).append(child)
            queue.append(child)
    return AgentCalls(kept, opened, closed, truncated)


def _api_tree(thread: Thread, run: Run) -> Tree:
    children, opened, closed, truncated = _agent_calls(thread, run.run_id)
    wanted = {run.run_id} | {c for cs in children.values() for c in cs}
    runs = {r.run_id: r for r in Run.objects.filter(thread=thread, run_id__in=wanted)}
    tree = Tree("api", truncated=truncated)

    def run_node(r: Run, depth: int) -> Node:
        before = opened.get(r.run_id)
        name = before.data.get("agent") if before is not None and isinstance(before.data, dict) else None
        return Node(
            key=f"run:{r.pk}",
            kind="agent",
            name=str(name or r.run_id),
            depth=depth,
            start=before.occurred_at if before is not None else r.started_at,
            # the agent's own clock at both ends when it logged them; else the run's record
            end=closed[r.run_id].occurred_at if r.run_id in closed else r.ended_at,
            failed=r.status == Run.Status.FAILED,
            status=r.status,
            note=r.error,
            current=r.pk == run.pk,
        )

    # Depth first: each run, then its calls, tools and sub-agents in the order they began.
    stack: list[Node | tuple[Run, int]] = [(run, 0)]
    while stack and len(tree.nodes) < MAX_NODES:
        item = stack.pop()
        if isinstance(item, Node):
            tree.nodes.append(item)
            continue
        current, depth = item
        tree.nodes.append(run_node(current, depth))
        waterfall = run_waterfall(run=current)
        tree.truncated |= waterfall.truncated
        below: list[tuple[datetime, int, Node | tuple[Run, int]]] = [
            (
                b.start,
                b.seq,
                Node(
                    key=f"event:{b.seq}",
                    kind="llm" if b.kind == "call" else "tool",
                    name=b.label,
                    depth=depth + 1,
                    start=b.start,
                    end=b.end,
                    failed=b.failed,
                ),
            )
            for b in waterfall.bars
        ]
        for child_id in children.get(current.run_id, []):
            if (child := runs.get(child_id)) is not None:
                began = opened[child_id] if child_id in opened else None
                below.append(
                    (
                        began.occurred_at if began else child.started_at,
                        began.seq if began else 0,
                        (child, depth + 1),
                    )
                )
        below.sort(key=lambda b: (b[0], b[1]))
        stack.extend(b[2] for b in reversed(below))
    tree.truncated |= bool(stack)
    return tree


def run_tree(*, thread: Thread, run: Run, offset: int = 0) -> Tree:
    """The run's tree (see the module's docstring), each node placed on the tree's time axis;
    PAGE_NODES of its nodes from `offset` (in tree order) are kept."""
    metadata = thread.session.metadata if isinstance(thread.session.metadata, dict) else {}
    tree = _otel_tree(thread, run.run_id) if metadata.get("otel") else Tree("otel")
    if not tree.nodes:
        tree = _api_tree(thread, run)
    starts = [n.start for n in tree.nodes if n.start is not None]
    if not starts:
        return _page(thread, tree, offset)
    begin = min(starts)
    finish = max([n.end for n in tree.nodes if n.end is not None] + starts)
    total = (finish - begin).total_seconds() * 1000
    tree.total_ms = total or None
    for node in tree.nodes:
        if node.start is None:
            continue
        node.offset_ms = (node.start - begin).total_seconds() * 1000
        node.left = min(round(100 * node.offset_ms / total, 2), 99.5) if total else 0.0
        node.width = round(max(100 * (node.duration_ms or 0) / total, 0.5), 2) if total else 0.5
    return _page(thread, tree, offset)


def _page(thread: Thread, tree: Tree, offset: int) -> Tree:
    tree.count = len(tree.nodes)
    tree.offset = min(max(offset, 0), max(tree.count - 1, 0))
    tree.nodes = tree.nodes[tree.offset : tree.offset + PAGE_NODES]
    if tree.offset + PAGE_NODES < tree.count:
        tree.next_offset = tree.offset + PAGE_NODES
    if tree.offset:
        tree.previous_offset = max(tree.offset - PAGE_NODES, 0)
    if tree.source == "otel":
        _span_kinds(thread, tree.nodes)
    return tree


VALUE_CHARS = 4000  # an attribute's value shown in an opened node; longer ones are cut, and say so


@dataclass
class NodeEvent:
    name: str
    at: datetime | None
    attributes: list[tuple[str, str]]


@dataclass
class NodeDetail:
    kind: str
    name: str
    start: datetime | None
    end: datetime | None
    status: str
    attributes: list[tuple[str, str]]
    events: list[NodeEvent]
    more_events: bool = False


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > VALUE_CHARS:
        return f"{text[:VALUE_CHARS]} … (cut: {len(text):,} characters)"
    return text


def _pairs(mapping_: Any) -> list[tuple[str, str]]:
    if not isinstance(mapping_, dict):
        return []
    return [(str(k), _shown(v)) for k, v in sorted(mapping_.items(), key=lambda kv: str(kv[0]))]


def _span_detail(thread: Thread, span_id: str) -> NodeDetail | None:
    traces = OtelTrace.objects.filter(workspace_id=thread.workspace_id, thread=thread).values("trace_id")
    span = (
        OtelSpan.objects.filter(workspace_id=thread.workspace_id, span_id=span_id, trace_id__in=traces)
        .order_by("pk")
        .first()
    )
    if span is None:
        return None
    events = [
        NodeEvent(str(e.get("name", "")), _dt(int(e.get("time_ns") or 0)), _pairs(e.get("attributes")))
        for e in (span.events or [])[:NODE_EVENTS]
        if isinstance(e, dict)
    ]
    # GenAI content sent as log records naming the span (ADK, the semconv's log events)
    logs = list(
        OtelLog.objects.filter(
            workspace_id=thread.workspace_id, trace_id=span.trace_id, span_id=span.span_id
        ).order_by("time_ns", "pk")[:NODE_EVENTS]
    )
    events += [
        NodeEvent(
            log.event_name or "log",
            _dt(log.time_ns),
            _pairs({**(log.attributes or {}), **({"body": log.body} if log.body is not None else {})}),
        )
        for log in logs
    ]
    status = {0: "unset", 1: "ok", STATUS_ERROR: "error"}.get(span.status_code, str(span.status_code))
    attributes = _pairs(span.attributes)
    attributes += [(f"resource: {k}", v) for k, v in _pairs(span.resource)]
    if span.scope.get("name"):
        attributes.append(("scope", _shown(span.scope.get("name"))))
    return NodeDetail(
        kind=_span_kind(span.attributes, span.name),
        name=span.name,
        start=_dt(span.start_ns),
        end=_dt(span.end_ns),
        status=f"{status}: {span.status_message}" if span.status_message else status,
        attributes=attributes,
        events=events[:NODE_EVENTS],
        more_events=len(span.events or []) > NODE_EVENTS or len(events) > NODE_EVENTS,
    )


def _event_node(e: Event) -> NodeEvent:
    shown: dict[str, Any] = {"role": e.role, "call_id": e.call_id, "content": e.content}
    return NodeEvent(f"{e.type} #{e.seq}", e.occurred_at, [(k, _shown(v)) for k, v in shown.items() if v])


def _event_detail(thread: Thread, seq: int) -> NodeDetail | None:
    """An LLM call (its LLMCallStart, then its end) or a tool call (its ToolCall, then its results)."""
    e = Event.objects.filter(thread=thread, seq=seq).select_related("run").first()
    if e is None:
        return None
    found = [e]
    if e.type == CALL_START:
        end = call_end_of(thread=thread, start=e)
        found += [end] if end is not None else []
    elif e.type == "ToolCall":
        window = Event.objects.filter(thread=thread, seq__gte=e.seq, type__in=("ToolCall", "ToolResult"))
        found += tool_pairs(events=list(window.order_by("seq")[:TOOL_WINDOW]))[0].get(e.seq, [])
    attributes = [("type", e.type), *([("call_id", _shown(e.call_id))] if e.call_id else []), *_pairs(e.data)]
    if e.parts:
        attributes.append(("parts", _shown(e.parts)))
    for end in found[1:]:
        attributes += [(f"{end.type} #{end.seq}: {k}", v) for k, v in _pairs(end.data)]
    return NodeDetail(
        kind="llm" if e.type == CALL_START else "tool",
        name=e.type,
        start=e.occurred_at,
        end=found[-1].occurred_at if len(found) > 1 else None,
        status="error" if any(x.is_error for x in found) else "",
        attributes=attributes,
        events=[_event_node(x) for x in found[:NODE_EVENTS]],
        more_events=len(found) > NODE_EVENTS,
    )


def _run_detail(thread: Thread, pk: int) -> NodeDetail | None:
    run = Run.objects.filter(thread=thread, pk=pk).first()
    if run is None:
        return None
    marks = list(
        Event.objects.filter(run=run)
        .filter(Q(type__in=("BeforeAgentCall", "AfterAgentCall")) | Q(is_error=True))
        .order_by("seq")[: NODE_EVENTS + 1]
    )
    before = next((m for m in marks if m.type == "BeforeAgentCall"), None)
    fields: dict[str, Any] = {
        "run_id": run.run_id,
        "iteration": run.iteration,
        "events": run.event_count,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cost": str(run.cost),
    }
    if run.input is not None:
        fields["input"] = run.input
    if run.error:
        fields["error"] = run.error
    attributes = _pairs(fields)
    if before is not None:
        attributes += [(f"agent call: {k}", v) for k, v in _pairs(before.data)]
    return NodeDetail(
        kind="agent",
        name=run.run_id,
        start=before.occurred_at if before else run.started_at,
        end=run.ended_at,
        status=run.status,
        attributes=attributes,
        events=[_event_node(m) for m in marks[:NODE_EVENTS]],
        more_events=len(marks) > NODE_EVENTS,
    )


def trace_node(*, thread: Thread, key: str) -> NodeDetail | None:
    """One node of a thread's trace opened (`Node.key`), or None when the thread has no such node."""
    kind, _, ident = key.partition(":")
    if kind == "span" and len(ident) == 16:
        return _span_detail(thread, ident)
    if kind in ("event", "run") and ident.isdigit() and len(ident) < 19:
        return (_event_detail if kind == "event" else _run_detail)(thread, int(ident))
    return None
