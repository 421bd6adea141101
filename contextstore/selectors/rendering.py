"""Reads that build what a model sees: the rendered context and peteos' rolling windows.

A render is prefix blocks, the summary, the newest history that fits the budget, suffix blocks.
It reads only what it returns: the history walk reads (position, tokens, type, role) newest
first and stops when the budget is spent, then loads just the events it keeps.

History is kept in *units*: a tool call and all its results are included together or left out
together, in order, so a render never starts with a tool result nor leaves a call unanswered
(providers reject both). A unit larger than the remaining budget is skipped and the walk goes
on with older units (`on_oversize="skip"`), or the walk stops there (`"stop"`); every event
left out is reported with its reason, and `fits` is false whenever one was left out for size.

The same events and texts give the same messages byte for byte in every format (raw, openai,
anthropic): `build_messages` is a pure function, which render records rely on to rebuild a
past call's context (services/renders.py).
"""

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery

from contextstore import selectors
from contextstore.db import PreparedGet, PreparedRows, read_together
from contextstore.expressions import block_text
from contextstore.models import ContextBlock, ContextBlockVersion, Event, Thread
from contextstore.tokens import count_tokens, is_thinking, part_text
from contextstore.toolcalls import (
    CALL_PART_TYPES,
    RESULT_PART_TYPES,
    arguments_json,
    arguments_object,
    event_calls,
    result_call_id,
)

FORMATS = ("raw", "openai", "anthropic")
ON_OVERSIZE = ("skip", "stop")
# After this many units in a row that do not fit, the rest of history is taken as not fitting:
# keeps the walk's cost following the budget rather than the length of history.
MAX_CONSECUTIVE_SKIPS = 8

# Why an event was left out of a render (stats.skipped[].reason), in words for people.
SKIP_REASONS = {
    "oversize": "larger than the budget left; older events still came",
    "budget": "the budget was spent; this and older events were left out",
    "stop": "did not fit and on_oversize=stop: history ends here",
    "orphan_tool_result": "a tool result whose call is not in the context (providers reject it)",
    "unanswered_tool_call": "a tool call whose results are not all in the context",
}

ROLE_BY_TYPE = {
    "Task": "user", "Input": "user", "Feedback": "user", "Message": "user",
    "LLMOutput": "assistant", "Reasoning": "assistant", "ToolCall": "assistant",
    "StepResult": "assistant", "ToolResult": "tool", "PythonOutput": "tool",
    "Summary": "system", "Error": "system", "Notification": "system",
}


def role_of(type_: str, role: str) -> str:
    return role or ROLE_BY_TYPE.get(type_, "user")


def event_role(event: Event) -> str:
    return role_of(event.type, event.role)


def _kind(type_: str, role: str) -> str:
    """call, result or other: all the walk needs to know to keep units whole."""
    if role_of(type_, role) == "tool" or type_ == "ToolResult":  # peteos keeps results as user
        return "result"
    return "call" if type_ == "ToolCall" else "other"


def event_parts(event: Event, *, strip_thinking: bool) -> list | None:
    if not event.parts or not strip_thinking:
        return event.parts
    return [p for p in event.parts if not is_thinking(p)]


def event_cost(token_count: int, thinking_tokens: int, strip_thinking: bool) -> int:
    return token_count - (thinking_tokens if strip_thinking else 0)


# ------------------------------------------------------------------ units

@dataclass(slots=True)
class Row:
    position: int
    seq: int
    cost: int
    kind: str
    role: str
    pk: int = 0


def group_units(rows: Iterator[Row]) -> Iterator[list[Row]]:
    """Newest-first rows → newest-first units, each newest-first.

    A unit is [head?][calls...][results...] read forward: results attach to the calls right
    before them (parallel calls may be separate events); an assistant event just before results
    with no ToolCall event may carry the calls in its parts. Anything else is a unit alone.
    """
    unit: list[Row] = []
    phase = ""
    for row in rows:
        if unit and phase == "results" and row.kind == "result":
            unit.append(row)
            continue
        if unit and phase in ("results", "calls") and row.kind == "call":
            unit.append(row)
            phase = "calls"
            continue
        if unit and phase == "results" and row.kind == "other" and row.role == "assistant":
            unit.append(row)
            yield unit
            unit, phase = [], ""
            continue
        if unit:
            yield unit
        unit, phase = [row], {"result": "results", "call": "calls"}.get(row.kind, "")
        if row.kind == "other":
            yield unit
            unit = []
    if unit:
        yield unit


@dataclass
class HistoryPlan:
    units: list[list[Row]] = field(default_factory=list)  # included, newest first
    left_out: list[dict[str, Any]] = field(default_factory=list)  # skipped or cut for size
    stopped: bool = False  # the walk ended before the oldest event


def _newest(thread_id: int, before: int | None = None) -> QuerySet:
    qs = Event.objects.filter(thread_id=thread_id, status=Event.Status.ACTIVE, visible=True)
    if before is not None:
        qs = qs.filter(position__lt=before)
    return qs.order_by("-position").values_list(
        "position", "seq", "token_count", "thinking_tokens", "type", "role", "pk")


# The thread's blocks, each with the id of its kept version (db.PreparedGet).
_BLOCKS = PreparedGet(lambda thread_id: selectors.thread_blocks(thread=thread_id).annotate(
    version_pk=Subquery(ContextBlockVersion.objects.filter(
        thread=OuterRef("thread"), name=OuterRef("name"), version=OuterRef("version"),
    ).values("pk")[:1])))
# The walk's pages, newest first (a LIMIT each), and the planned window (db.PreparedRows).
_NEWEST = PreparedRows(_newest)
_NEWEST_BEFORE = PreparedRows(_newest)


def first_page_size(thread: Thread, budget: int) -> int:
    """How many of the newest events the walk reads first: about what `budget` holds at the
    thread's average cost, and a few more."""
    average = max(thread.active_tokens // max(thread.active_event_count, 1), 1)
    return min(max(budget // average + 16, 32), 4096)


def plan_history(*, thread: Thread, budget: int, strip_thinking: bool, first_page: list[tuple],
                 page_size: int, on_oversize: str = "skip") -> HistoryPlan:
    """Choose the units that fit, newest first, reading only (position, seq, tokens, type, role).
    `first_page`: the newest `page_size` rows (_NEWEST), read by the caller; the walk reads
    older pages, each four times bigger, only while it needs them."""

    def rows() -> Iterator[Row]:
        got, size = first_page, page_size
        while True:
            for position, seq, tokens, think, type_, role, pk in got:
                yield Row(position, seq, event_cost(tokens, think, strip_thinking),
                          _kind(type_, role), role_of(type_, role), pk)
            if len(got) < size:
                return
            size = min(size * 4, 4096)
            got = _NEWEST_BEFORE.rows(thread.pk, got[-1][0], limit=size)

    plan = HistoryPlan()
    used, skips_in_a_row = 0, 0
    for unit in group_units(rows()):
        cost = sum(r.cost for r in unit)
        if used + cost <= budget:
            plan.units.append(unit)
            used += cost
            skips_in_a_row = 0
            continue
        give_up = on_oversize == "stop" or skips_in_a_row >= MAX_CONSECUTIVE_SKIPS or used >= budget
        reason = ("stop" if on_oversize == "stop" else "budget") if give_up else "oversize"
        plan.left_out.extend({"seq": r.seq, "position": r.position, "tokens": r.cost,
                              "reason": reason} for r in reversed(unit))
        if give_up:
            plan.stopped = True
            break
        skips_in_a_row += 1
    return plan


@dataclass(slots=True)
class HistoryEvent:
    """The fields of an event a render reads (the Event's own names): a render loads a hundred
    or more, and building model instances cost more than the query."""

    pk: int
    position: int
    seq: int
    type: str
    role: str
    content: str
    parts: Any
    data: Any
    token_count: int
    thinking_tokens: int


def skipped_inside(plan: HistoryPlan) -> list[int]:
    """Positions of units skipped for size inside the planned window (those past its oldest
    end are outside it anyway)."""
    positions = [r.position for unit in plan.units for r in unit]
    if not positions:
        return []
    first, last = min(positions), max(positions)
    return [x["position"] for x in plan.left_out
            if x["reason"] == "oversize" and first <= x["position"] <= last]


def load_planned(*, thread: Thread, plan: HistoryPlan, along: list[tuple[str, list]] = ()
                 ) -> list[HistoryEvent]:
    """The planned events, oldest first, in one query bounded by what was chosen.

    `along`: statements the caller's service writes in the same statement as this read
    (PostgreSQL, `WITH … AS (INSERT …)`), saving their round trip; only for a plan without
    units skipped inside its window, and only when there is something to read."""
    positions = [r.position for unit in plan.units for r in unit]
    if not positions:
        return []
    # Bounded above too, so events appended meanwhile cannot push the window over budget.
    first, last = min(positions), max(positions)
    skipped = skipped_inside(plan)
    if skipped:
        rows = _window(thread.pk, first, last).exclude(position__in=skipped)
    else:
        rows = _WINDOW.rows(thread.pk, first, last, along=along)
    wanted = set(positions)
    return [HistoryEvent(*row) for row in rows if row[1] in wanted]


def _window(thread_id: int, first: int, last: int) -> QuerySet:
    return Event.objects.filter(
        thread_id=thread_id, status=Event.Status.ACTIVE, visible=True, position__gte=first,
        position__lte=last,
    ).order_by("position").values_list(*HistoryEvent.__slots__)


_WINDOW = PreparedRows(_window)


# ------------------------------------------------------------------ validating units

@dataclass(slots=True)
class Item:
    """One history event as it will be shown: its calls (with ids) or the call it answers."""

    event: "Event | HistoryEvent"
    kind: str
    role: str
    calls: list[tuple[str, str, Any]] = field(default_factory=list)  # (id, name, arguments)
    answers: str | None = None


def valid_items(events: list[Event]) -> tuple[list[list[Item]], list[dict[str, Any]]]:
    """Units (oldest first) of events a provider accepts, and the events dropped as invalid.

    Calls without an id get `call_<seq>_<n>`; a result without one answers the first open call
    of its unit. A result answering nothing in its unit is an orphan; a unit whose calls are not
    all answered is dropped whole.
    """
    rows = [Row(e.position, e.seq, 0, _kind(e.type, e.role), event_role(e)) for e in reversed(events)]
    by_position = {e.position: e for e in events}
    units, dropped = [], []
    for unit_rows in group_units(iter(rows)):
        if len(unit_rows) == 1 and unit_rows[0].kind == "other":
            r = unit_rows[0]
            e = by_position[r.position]
            if r.role != "assistant" or not e.parts:  # makes no call (most events): nothing to pair
                units.append([Item(e, r.kind, r.role)])
                continue
        items = [Item(by_position[r.position], r.kind, r.role) for r in reversed(unit_rows)]
        open_ids: list[str] = []
        for item in items:
            if item.kind in ("call", "other") and item.role == "assistant":
                e = item.event
                for n, call in enumerate(event_calls(e.type, e.parts, e.data)):
                    item.calls.append((call.id or f"call_{e.seq}_{n}", call.name, call.arguments))
                open_ids.extend(c[0] for c in item.calls)
        answered: set[str] = set()
        kept: list[Item] = []
        for item in items:
            if item.kind != "result":
                kept.append(item)
                continue
            named = result_call_id(item.event.parts, item.event.data)
            target = named or next((i for i in open_ids if i not in answered), None)
            if target is None or target not in open_ids or target in answered:
                dropped.append(_dropped(item.event, "orphan_tool_result"))
                continue
            item.answers = target
            answered.add(target)
            kept.append(item)
        if set(open_ids) - answered:
            dropped.extend(_dropped(i.event, "unanswered_tool_call") for i in kept)
            continue
        if kept:
            units.append(kept)
    return units[::-1], dropped


def _dropped(event: Event, reason: str) -> dict[str, Any]:
    return {"seq": event.seq, "position": event.position, "tokens": event.token_count,
            "reason": reason}


# ------------------------------------------------------------------ blocks

@dataclass
class Section:
    name: str
    text: str
    tokens: int
    blocks: list[dict[str, Any]] = field(default_factory=list)
    shown: list[tuple[ContextBlock, str]] = field(default_factory=list)  # (block, its text)


def join_blocks(named_texts: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"## {name}\n{text}" for name, text in named_texts)


def block_section(name: str, blocks: list[ContextBlock], thread: Thread) -> Section:
    listing, shown = [], []
    for block in blocks:
        text = block_text(block, thread)
        listing.append({
            "name": block.name, "suppressed": text is None, "version": block.version,
            "kind": "expr" if block.expr is not None else "value",
            "tokens": count_tokens(text) if text else 0,
        })
        if text is not None:
            shown.append((block, text))
    joined = join_blocks([(b.name, t) for b, t in shown])
    return Section(name, joined, count_tokens(joined), listing, shown)


# ------------------------------------------------------------------ messages

def _text_of(event: Event, *, keep_thinking: bool) -> tuple[str, list[dict]]:
    """(text the model reads, thinking parts kept). Structured text parts win over `content`
    (frameworks often keep the same text in both)."""
    texts, thinking = [], []
    for part in event.parts or ():
        if is_thinking(part):
            if keep_thinking:
                thinking.append(part)
            continue
        if isinstance(part, dict) and part.get("type") in CALL_PART_TYPES:
            continue
        if isinstance(part, dict) and part.get("type") in RESULT_PART_TYPES and event.content:
            continue
        texts.append(part_text(part))
    texts = [t for t in texts if t]
    return ("\n".join(texts) if texts else event.content), thinking


def _tokens(event: Event, strip_thinking: bool) -> int:
    return event_cost(event.token_count, event.thinking_tokens, strip_thinking)


def _raw(units: list[list[Item]], strip_thinking: bool) -> list[dict[str, Any]]:
    out = []
    for item in (i for unit in units for i in unit):
        e = item.event
        message = {"role": item.role, "content": e.content, "section": "history", "seq": e.seq,
                   "position": e.position, "type": e.type, "tokens": _tokens(e, strip_thinking)}
        parts = event_parts(e, strip_thinking=strip_thinking)
        if parts:
            message["parts"] = parts
        if item.calls:
            message["tool_calls"] = [{"id": i, "name": n, "arguments": a} for i, n, a in item.calls]
        if item.answers:
            message["tool_call_id"] = item.answers
        out.append(message)
    return out


def _openai(units: list[list[Item]]) -> list[dict[str, Any]]:
    """Chat Completions messages: the calls of a unit on one assistant message, then one
    `tool` message per result. Thinking has no place in these messages and is left out."""
    out: list[dict[str, Any]] = []
    for unit in units:
        assistant: dict[str, Any] | None = None
        for item in unit:
            text, _ = _text_of(item.event, keep_thinking=False)
            if item.kind == "result":
                out.append({"role": "tool", "tool_call_id": item.answers, "content": text})
            elif item.calls:
                if assistant is None:
                    assistant = {"role": "assistant", "content": None, "tool_calls": []}
                    out.append(assistant)
                if text:
                    assistant["content"] = f"{assistant['content']}\n{text}" if assistant["content"] else text
                assistant["tool_calls"].extend(
                    {"id": i, "type": "function", "function": {"name": n, "arguments": arguments_json(a)}}
                    for i, n, a in item.calls)
            elif text:
                role = item.role if item.role in ("system", "user", "assistant", "developer") else "user"
                out.append({"role": role, "content": text})
    return out


def _anthropic_blocks(item: Item, strip_thinking: bool) -> tuple[str, list[dict[str, Any]]]:
    text, thinking = _text_of(item.event, keep_thinking=not strip_thinking)
    if item.kind == "result":
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": item.answers}
        if text:
            block["content"] = text
        return "user", [block]
    if item.role != "assistant":  # system-role history (summaries, errors, notes) reads as user text
        return "user", [{"type": "text", "text": text}] if text else []
    blocks: list[dict[str, Any]] = []
    for part in thinking:  # the API only takes thinking back with the signature it gave
        if part.get("type") == "thinking" and isinstance(part.get("signature"), str) \
                and isinstance(part.get("thinking"), str):
            blocks.append({"type": "thinking", "thinking": part["thinking"], "signature": part["signature"]})
        elif part.get("type") == "redacted_thinking" and isinstance(part.get("data"), str):
            blocks.append({"type": "redacted_thinking", "data": part["data"]})
    if text:
        blocks.append({"type": "text", "text": text})
    blocks.extend({"type": "tool_use", "id": i, "name": n, "input": arguments_object(a)}
                  for i, n, a in item.calls)
    return "assistant", blocks


def _anthropic(units: list[list[Item]], strip_thinking: bool) -> list[dict[str, Any]]:
    """Messages API turns: tool_use/tool_result blocks, consecutive same-role turns merged."""
    out: list[dict[str, Any]] = []
    for item in (i for unit in units for i in unit):
        role, blocks = _anthropic_blocks(item, strip_thinking)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def build_messages(
    *, fmt: str, prefix: str, summary: str, suffix: str, units: list[list[Item]],
    strip_thinking: bool,
) -> dict[str, Any]:
    """The messages (and for anthropic, `system`) from the chosen texts and events. Pure."""
    if fmt == "anthropic":
        system = [{"type": "text", "text": t} for t in (prefix, summary, suffix) if t]
        return {"system": system, "messages": _anthropic(units, strip_thinking)}
    if fmt == "openai":
        head = [{"role": "system", "content": t} for t in (prefix, summary) if t]
        tail = [{"role": "system", "content": suffix}] if suffix else []
        return {"messages": head + _openai(units) + tail}
    messages: list[dict[str, Any]] = []
    if prefix:
        messages.append({"role": "system", "section": "prefix", "content": prefix,
                         "tokens": count_tokens(prefix)})
    if summary:
        messages.append({"role": "system", "section": "summary", "content": summary,
                         "tokens": count_tokens(summary)})
    messages.extend(_raw(units, strip_thinking))
    if suffix:
        messages.append({"role": "system", "section": "suffix", "content": suffix,
                         "tokens": count_tokens(suffix)})
    return {"messages": messages}


def prefix_hash(prefix: str) -> str:
    return hashlib.sha256(prefix.encode()).hexdigest()


def effective_strip(fmt: str, strip_thinking: bool) -> bool:
    """Chat Completions messages cannot carry thinking, so openai renders always strip it."""
    return strip_thinking or fmt == "openai"


# ------------------------------------------------------------------ the render

@dataclass
class Rendered:
    """A render and what a record needs to rebuild it."""

    body: dict[str, Any]
    prefix: Section
    suffix: Section
    summary: str
    units: list[list[Item]]
    options: dict[str, Any]


@dataclass
class Planned:
    """A render up to its plan: blocks read, the budget split, the history units chosen."""

    thread: Thread
    max_tokens: int
    fmt: str
    strip: bool
    options: dict[str, Any]
    prefix: Section
    suffix: Section
    summary_tokens: int
    fixed: int  # tokens of prefix, summary and suffix: what history's budget is left after
    plan: HistoryPlan


def render_plan(
    *, thread: Thread, max_tokens: int, strip_thinking: bool = False, fmt: str = "raw",
    on_oversize: str = "skip",
) -> Planned:
    strip = effective_strip(fmt, strip_thinking)
    summary_tokens = count_tokens(thread.summary)
    # Each block with the id of its kept version, in the same query: a render record names
    # versions, and need not read the blocks again for them (services/renders.py). The newest
    # events come in the same round trip, sized before the blocks' tokens are known (a few
    # rows more than the walk needs when blocks take part of the budget).
    page_size = first_page_size(thread, max(max_tokens - summary_tokens, 0))
    blocks, newest = read_together((_BLOCKS, (thread.pk,), None), (_NEWEST, (thread.pk,), page_size))
    prefix = block_section("prefix", [b for b in blocks if b.placement == "prefix"], thread)
    suffix = block_section("suffix", [b for b in blocks if b.placement == "suffix"], thread)
    fixed = prefix.tokens + summary_tokens + suffix.tokens
    plan = plan_history(thread=thread, budget=max(max_tokens - fixed, 0), strip_thinking=strip,
                        first_page=newest, page_size=page_size, on_oversize=on_oversize)
    options = {"strip_thinking": strip_thinking, "on_oversize": on_oversize}
    return Planned(thread, max_tokens, fmt, strip, options, prefix, suffix, summary_tokens, fixed, plan)


def render_finish(planned: Planned, *, along: list[tuple[str, list]] = ()) -> Rendered:
    """Load the planned events and build the messages (`along`: see load_planned)."""
    thread, plan, strip, prefix, suffix = (planned.thread, planned.plan, planned.strip,
                                           planned.prefix, planned.suffix)
    units, invalid = valid_items(load_planned(thread=thread, plan=plan, along=along))
    used = sum(_tokens(i.event, strip) for unit in units for i in unit)
    included = sum(len(u) for u in units)
    left_out = sorted(plan.left_out + invalid, key=lambda x: -x["position"])
    total = planned.fixed + used
    body = build_messages(fmt=planned.fmt, prefix=prefix.text, summary=thread.summary,
                          suffix=suffix.text, units=units, strip_thinking=strip)
    body = {"format": planned.fmt, **body, "stats": {
        "max_tokens": planned.max_tokens,
        "total_tokens": total,
        # Honest: false when anything visible was left out for size, not only when over budget.
        "fits": total <= planned.max_tokens and not plan.left_out,
        "prefix_hash": prefix_hash(prefix.text),
        "on_oversize": planned.options["on_oversize"],
        "strip_thinking": strip,
        "skipped": left_out,
        "sections": {
            "prefix": {"tokens": prefix.tokens, "blocks": prefix.blocks},
            "summary": {"tokens": planned.summary_tokens},
            "history": {
                "tokens": used,
                "events_included": included,
                "events_omitted": max(thread.active_event_count - included, 0),
                # the walk ended before the oldest event: older events are not listed one by one
                "older_not_examined": plan.stopped,
            },
            "suffix": {"tokens": suffix.tokens, "blocks": suffix.blocks},
        },
    }}
    return Rendered(body, prefix, suffix, thread.summary, units, planned.options)


def render(
    *, thread: Thread, max_tokens: int, strip_thinking: bool = False, fmt: str = "raw",
    on_oversize: str = "skip",
) -> Rendered:
    return render_finish(render_plan(thread=thread, max_tokens=max_tokens,
                                     strip_thinking=strip_thinking, fmt=fmt, on_oversize=on_oversize))


def context_render(
    *, thread: Thread, max_tokens: int, strip_thinking: bool = False, fmt: str = "raw",
    on_oversize: str = "skip",
) -> dict[str, Any]:
    """Prefix blocks, the summary, the newest valid history units that fit, suffix blocks.

    Returns {"format", "messages", ("system" for anthropic), "stats"}; stats give tokens per
    section, events included and omitted, every event left out with its reason, and a hash of
    the prefix so an agent can see its prompt cache invalidated.
    """
    return render(thread=thread, max_tokens=max_tokens, strip_thinking=strip_thinking, fmt=fmt,
                  on_oversize=on_oversize).body


# ------------------------------------------------------------------ peteos windows

def special_tokens(thread: Thread) -> int:
    """Tokens of peteos' special slots: the system prompt and the tool definitions."""
    # A thread imported from peteos keeps its slot messages and their count as peteos made it.
    counted = (thread.extra or {}).get("peteos", {}).get("special_tokens")
    if isinstance(counted, int):
        return counted
    tools = json.dumps(thread.tool_definitions, ensure_ascii=False) if thread.tool_definitions else ""
    return count_tokens(thread.system_prompt) + count_tokens(tools)


def total_tokens(*, thread: Thread) -> int:
    """peteos total_token_count: the special slots plus the working context."""
    return special_tokens(thread) + thread.active_tokens


def window_by_count(*, thread: Thread, count: int) -> dict[str, Any]:
    """peteos rolling_sequence_window: the last `count` non-special messages.

    covers_all is true when nothing would be dropped (peteos returns None then).
    """
    events = selectors.working_context_tail(thread=thread, count=count)
    return {"events": events, "covers_all": thread.active_event_count <= count}


def window_by_tokens(*, thread: Thread, max_tokens: int) -> dict[str, Any]:
    """peteos rolling_token_window: keep messages from the end while the total, special
    messages included, stays within max_tokens; covers_all when nothing needs dropping."""
    budget = max_tokens - special_tokens(thread)
    events = selectors.working_context_tail(thread=thread, max_tokens=budget)
    return {"events": _without_dangling_tool_results(events),
            "covers_all": total_tokens(thread=thread) <= max_tokens}


def _without_dangling_tool_results(events: list[Event]) -> list[Event]:
    """Drop events holding a tool_result whose tool_use fell out of the window.

    Mirrors peteos' _strip_dangling_tool_results: some model APIs reject a result with no call.
    """
    open_calls: set[str] = set()
    kept: list[Event] = []
    for event in events:
        parts = [p for p in event.parts or () if isinstance(p, dict)]
        dangling = False
        for part in parts:
            if part.get("type") == "tool_use":
                open_calls.add(part.get("call_id"))
            elif part.get("type") == "tool_result" and part.get("call_id") not in open_calls:
                dangling = True
        if dangling:
            continue
        open_calls.difference_update(p.get("call_id") for p in parts if p.get("type") == "tool_result")
        kept.append(event)
    return kept
