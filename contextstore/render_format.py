"""The messages of a render, from the texts and events it chose: pure, no database.

History is kept in *units*: a tool call and all its results are included together or left out
together, in order, so a render never starts with a tool result nor leaves a call unanswered
(providers reject both). `group_units` groups rows into units for the history walk
(selectors/rendering.py), which keeps whole turns of them (`opens_turn`), and for
`valid_items`, which pairs calls with results and drops what a provider would refuse;
`coherent` then drops thinking left without its message and anything before the first turn's
start, so history opens with a user message.

The same events and texts give the same messages byte for byte in every format (raw, openai,
anthropic): `build_messages` is a pure function, which render records rely on to rebuild a
past call's context (selectors/renders.py).
"""

import functools
import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from contextstore.tokens import (
    count_tokens,
    framed,
    is_peteos_thinking,
    is_thinking,
    part_text,
    peteos_message,
)
from contextstore.toolcalls import (
    CALL_PART_TYPES,
    RESULT_PART_TYPES,
    arguments_json,
    arguments_object,
    event_calls,
    result_call_id,
)

FORMATS = ("raw", "openai", "anthropic")


class EventFields(Protocol):
    """What a render reads of an event: a HistoryEvent's fields, which an Event has too."""

    @property
    def pk(self) -> int: ...
    @property
    def position(self) -> int: ...
    @property
    def seq(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def parts(self) -> list[Any] | None: ...
    @property
    def data(self) -> Any: ...
    @property
    def token_count(self) -> int: ...
    @property
    def thinking_tokens(self) -> int: ...


@dataclass(slots=True)
class HistoryEvent:
    """The fields of an event a render reads (the Event's own names): a render loads a hundred
    or more, and building model instances cost more than the query. An Event has the same
    fields, so everything here takes either (a render record is rebuilt from Events)."""

    pk: int
    position: int
    seq: int
    type: str
    role: str
    content: str
    parts: list[Any] | None
    data: Any
    token_count: int
    thinking_tokens: int


ROLE_BY_TYPE = {
    "Task": "user", "Input": "user", "Feedback": "user", "Message": "user",
    "LLMOutput": "assistant", "Reasoning": "assistant", "ToolCall": "assistant",
    "StepResult": "assistant", "ToolResult": "tool", "PythonOutput": "tool",
    "Summary": "system", "Error": "system", "Notification": "system",
}


def role_of(type_: str, role: str) -> str:
    return role or ROLE_BY_TYPE.get(type_, "user")


def event_role(event: EventFields) -> str:
    return role_of(event.type, event.role)


# The types of the provider conversation itself: what a user, the model or a tool said. Every
# other type (Error, Notification, the runtime types, a framework's own: spans, state changes,
# checkpoints) is an aside: shown to the model, but never part of a tool exchange's structure.
CONVERSATION_TYPES = frozenset({
    "Task", "Input", "Feedback", "Message", "LLMOutput", "Reasoning", "ToolCall", "StepResult",
    "ToolResult", "PythonOutput", "Summary",
})
# The documented types that are never the model's own message, whatever role they are logged
# with: an `Error` an agent logs as the assistant's ("rate limited once, retried") is still an
# aside, and never breaks the tool exchange it was logged in. (The runtime types are
# eventspec.RUNTIME_TYPES, spelled out: this module stands beside eventspec, not above it.)
ASIDE_TYPES = frozenset({"Error", "Notification", "BeforeAgentCall", "AfterAgentCall", "LLMCallStart",
                         "LLMCallEnd", "LLMComplete"})


def kind_of(type_: str, role: str) -> str:
    """How an event takes part in a turn, all the walk needs to know to keep units whole:
    `result` (a tool result: type ToolResult or role tool), `call` (a ToolCall), `aside` (not
    part of the provider conversation: Error, Notification and the runtime types whatever
    their role, any other type unless the model wrote it, role assistant) or `other` (a
    message: a user's, the model's, a summary). An aside inside a tool exchange stays with
    the exchange and is shown right after its last result (valid_items); elsewhere it is shown
    where it stands."""
    shown_as = role_of(type_, role)
    if shown_as == "tool" or type_ == "ToolResult":  # peteos keeps results as user
        return "result"
    if type_ == "ToolCall":
        return "call"
    if type_ in ASIDE_TYPES:
        return "aside"
    return "aside" if type_ not in CONVERSATION_TYPES and shown_as != "assistant" else "other"


def opens_turn(type_: str, role: str) -> bool:
    """Whether an event starts a turn: a user message (not a tool result kept as user), or a
    collapse's summary, which stands for the history it replaced, turn starts included."""
    return type_ == "Summary" or (role_of(type_, role) == "user" and kind_of(type_, role) != "result")


@functools.lru_cache(maxsize=1024)
def event_class(type_: str, role: str) -> tuple[str, str, bool]:
    """(kind_of, role_of, opens_turn) of an event: the walk and valid_items ask it of every
    event, and threads use a handful of (type, role) pairs. Bounded, as a role is any text."""
    return kind_of(type_, role), role_of(type_, role), opens_turn(type_, role)


def _stripped(event: EventFields, part: Any) -> bool:
    """Whether strip_thinking removes `part` of `event`: of a peteos message what peteos'
    ``Context.strip_thinking`` removes, so the render shows the messages peteos' stripped
    context has; of any other event every thinking part."""
    if peteos_message(event.data) is not None:
        return is_peteos_thinking(part)
    return is_thinking(part)


def event_parts(event: EventFields, *, strip_thinking: bool) -> list[Any] | None:
    if not event.parts or not strip_thinking:
        return event.parts
    return [p for p in event.parts if not _stripped(event, p)]


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
    opens: bool = False  # starts a turn (opens_turn)


def group_units(rows: Iterator[Row]) -> Iterator[list[Row]]:
    """Newest-first rows → newest-first units, each newest-first.

    A unit is [head?][calls...][results...] read forward: results attach to the calls right
    before them (parallel calls may be separate events); an assistant event just before results
    with no ToolCall event may carry the calls in its parts. Asides between its first call (or
    head) and its last result belong to it, so an Error logged between two results never breaks
    the exchange; asides before its first call are not its own (_closed). Anything else is a
    unit alone.
    """
    unit: list[Row] = []
    phase = ""
    for row in rows:
        if not unit and row.kind in ("other", "aside"):  # a lone message, most of history
            yield [row]
            continue
        if unit and row.kind == "aside":  # inside an exchange (a unit is open only in one)
            unit.append(row)
            continue
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
            yield from _closed(unit)
        unit, phase = [row], {"result": "results", "call": "calls"}.get(row.kind, "")
        if row.kind == "other":
            yield unit
            unit = []
    if unit:
        yield from _closed(unit)


def _closed(unit: list[Row]) -> Iterator[list[Row]]:
    """A unit group_units closes, without the asides read after its oldest call or result:
    those stand before the exchange, each a unit alone (newest first, as ever)."""
    n = len(unit)
    while unit[n - 1].kind == "aside":
        n -= 1
    if n == len(unit):
        yield unit
        return
    yield unit[:n]
    for row in unit[n:]:
        yield [row]


# ------------------------------------------------------------------ validating units

@dataclass(slots=True)
class Item:
    """One history event as it will be shown: its calls (with ids) or the call it answers."""

    event: EventFields
    kind: str
    role: str
    calls: list[tuple[str, str, Any]] = field(default_factory=list)  # (id, name, arguments)
    answers: str | None = None


def valid_items(events: Sequence[EventFields], walked: list[list[Row]] | None = None
                ) -> tuple[list[list[Item]], list[dict[str, Any]]]:
    """Units (oldest first) of events a provider accepts, and the events dropped as invalid.

    Calls without an id get `call_<seq>_<n>`; a result without one answers the first open call
    of its unit. A result answering nothing in its unit is an orphan; a unit whose calls are not
    all answered is dropped whole. A unit's asides come after its last result, where every
    provider takes them (tool results must follow their calls at once), and stay when the
    exchange around them is dropped: they were never part of it.

    `walked`: group_units of exactly these events (newest first), when the caller has them
    already (the render's walk: selectors/rendering.walked_units); grouping again costs as much
    as the rest.
    """
    if walked is None:
        rows = []
        for e in reversed(events):
            kind, role, _ = event_class(e.type, e.role)
            rows.append(Row(e.position, e.seq, 0, kind, role))
        walked = list(group_units(iter(rows)))
    newest_first = events[::-1]  # the rows' order: unit after unit, each newest first
    at = 0
    units, dropped = [], []
    for unit_rows in walked:
        if len(unit_rows) == 1 and unit_rows[0].kind in ("other", "aside"):
            r, e = unit_rows[0], newest_first[at]
            at += 1
            if r.role != "assistant" or not e.parts:  # makes no call (most events): nothing to pair
                units.append([Item(e, r.kind, r.role)])
                continue
        else:
            at += len(unit_rows)
        items = [Item(e, r.kind, r.role)
                 for r, e in zip(reversed(unit_rows), reversed(newest_first[at - len(unit_rows):at]),
                                 strict=True)]
        asides = [i for i in items if i.kind == "aside"]
        if asides:
            items = [i for i in items if i.kind != "aside"]
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
            kept = []
        if kept or asides:
            units.append(kept + asides)
    return units[::-1], dropped


def without_emptied(units: list[list[Item]], strip_thinking: bool
                    ) -> tuple[list[list[Item]], list[dict[str, Any]]]:
    """`units` without the events stripping thinking leaves empty (no text, no parts but
    thinking, no calls, no result), and those events as dropped: peteos'
    ``Context.strip_thinking`` drops a message with nothing but thinking or nothing at all.
    Without stripping, `units` as they are."""
    if not strip_thinking:
        return units, []
    kept, dropped = [], []
    for unit in units:
        shown = []
        for item in unit:
            e = item.event
            if item.kind == "result" or item.calls or e.content or event_parts(e, strip_thinking=True):
                shown.append(item)
            else:
                dropped.append(_dropped(e, "empty_after_strip"))
        if shown:
            kept.append(shown)
    return kept, dropped


def _thinking_only(item: Item) -> bool:
    """An assistant event that shows nothing but thinking (a Reasoning event, mostly)."""
    e = item.event
    if peteos_message(e.data) is not None:
        # peteos keeps a message with any part besides "thinking" (an empty text, a redacted
        # thinking): only one of nothing but thinking parts is thinking only.
        return (item.role == "assistant" and bool(e.parts)
                and all(is_peteos_thinking(p) for p in e.parts or ()))
    return (item.role == "assistant" and item.kind != "result" and not item.calls
            and any(is_thinking(p) for p in e.parts or ()) and not _text_of(e, keep_thinking=False)[0])


def coherent(events: Sequence[EventFields], units: list[list[Item]]
             ) -> tuple[list[list[Item]], list[dict[str, Any]]]:
    """`units` (chosen from `events`, oldest first) as a provider takes them, and the events
    dropped: an event with nothing but thinking is kept only right before the assistant message
    it belongs to (orphan thinking: its message was left out, or is still to come), and history
    starts with a turn's start that shows text (events before it: no_turn_start)."""
    items = [i for unit in units for i in unit]
    by_position = {i.event.position: i for i in items}
    after = {e.position: n.position for e, n in zip(events, events[1:], strict=False)}
    drop: dict[int, str] = {}
    for item in reversed(items):
        if not _thinking_only(item):
            continue
        owner = by_position.get(after.get(item.event.position, -1))
        if owner is None or owner.event.position in drop or owner.role != "assistant" \
                or owner.kind == "result":
            drop[item.event.position] = "orphan_thinking"
    for item in items:
        e = item.event
        if opens_turn(e.type, e.role) and e.position not in drop and _text_of(e, keep_thinking=False)[0]:
            break
        drop.setdefault(e.position, "no_turn_start")
    if not drop:
        return units, []
    kept = [[i for i in unit if i.event.position not in drop] for unit in units]
    return [u for u in kept if u], [_dropped(i.event, drop[i.event.position])
                                    for i in items if i.event.position in drop]


def _dropped(event: EventFields, reason: str) -> dict[str, Any]:
    return {"seq": event.seq, "position": event.position, "tokens": event.token_count,
            "reason": reason}


# A block of this name is a framework's own system prompt (the AgentScope adapter keeps the
# agent's there): sent as its text alone, as the framework sends it, without the "## name" line.
SYSTEM_PROMPT_BLOCK = "system_prompt"


def join_blocks(named_texts: list[tuple[str, str]]) -> str:
    return "\n\n".join(text if name == SYSTEM_PROMPT_BLOCK else f"## {name}\n{text}"
                       for name, text in named_texts)


# ------------------------------------------------------------------ messages

def _text_of(event: EventFields, *, keep_thinking: bool) -> tuple[str, list[dict[str, Any]]]:
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


def shown_text(event: EventFields) -> str:
    """The text a model reads of an event, without thinking: its text parts, else its content
    (a call's reply is read the same way: selectors/calls.llm_call_reply)."""
    return _text_of(event, keep_thinking=False)[0]


def event_tokens(event: EventFields, strip_thinking: bool) -> int:
    return event_cost(event.token_count, event.thinking_tokens, strip_thinking)


class _Counts:
    """Each message's tokens as the builders make them (tokens.request_tokens' pieces): an event
    counts framed in the message it went into; one that adds nothing to any message (no text,
    no block) counts with the next message, or the last if none follows, so the messages' counts
    always add up to the render's history tokens."""

    def __init__(self) -> None:
        self.n: list[int] = []
        self.carry = 0

    def new(self, tokens: int) -> None:
        self.n.append(tokens + self.carry)
        self.carry = 0

    def add(self, index: int, tokens: int) -> None:
        self.n[index] += tokens

    def done(self) -> list[int]:
        if self.carry and self.n:
            self.n[-1] += self.carry
            self.carry = 0
        return self.n


def _item_tokens(item: Item, strip_thinking: bool) -> int:
    return framed(event_tokens(item.event, strip_thinking))


def in_order(units: list[list[Item]], place: Callable[[Item], int | None]) -> list[list[Item]]:
    """`units`' items in the order of their `place` (an item without one keeps its place after
    the item before it), units split where that order parts them: consecutive items of one unit
    stay one unit, so the same order gives back the same units. A peteos thread's render sends
    its messages in peteos' display order (selectors/rendering.in_peteos_order); a record's rebuild
    puts its events back in the order the render showed them (selectors/renders)."""
    keyed: list[tuple[tuple[int, int], int, Item]] = []
    last = -1
    for n, unit in enumerate(units):
        for item in unit:
            at = place(item)
            last = at if at is not None else last
            keyed.append(((last, len(keyed)), n, item))
    keyed.sort(key=lambda k: k[0])
    out: list[list[Item]] = []
    previous = None
    for _, n, item in keyed:
        if out and n == previous:
            out[-1].append(item)
        else:
            out.append([item])
        previous = n
    return out


def _raw(units: list[list[Item]], strip_thinking: bool, counts: _Counts) -> list[dict[str, Any]]:
    out = []
    for item in (i for unit in units for i in unit):
        e = item.event
        message = {"role": item.role, "content": e.content, "section": "history", "seq": e.seq,
                   "position": e.position, "type": e.type, "tokens": event_tokens(e, strip_thinking)}
        parts = event_parts(e, strip_thinking=strip_thinking)
        if parts:
            message["parts"] = parts
        if item.calls:
            message["tool_calls"] = [{"id": i, "name": n, "arguments": a} for i, n, a in item.calls]
        if item.answers:
            message["tool_call_id"] = item.answers
        out.append(message)
        counts.new(framed(event_tokens(e, strip_thinking)))
    return out


def _openai(units: list[list[Item]], summary_as_user: bool, counts: _Counts) -> list[dict[str, Any]]:
    """Chat Completions messages: the calls of a unit on one assistant message, then one
    `tool` message per result. Thinking has no place in these messages and is left out."""
    out: list[dict[str, Any]] = []
    for unit in units:
        assistant: dict[str, Any] | None = None
        at = 0  # the assistant message's index
        for item in unit:
            text, _ = _text_of(item.event, keep_thinking=False)
            tokens = _item_tokens(item, True)
            if item.kind == "result":
                out.append({"role": "tool", "tool_call_id": item.answers, "content": text})
                counts.new(tokens)
            elif item.calls:
                if assistant is None:
                    assistant = {"role": "assistant", "content": None, "tool_calls": []}
                    out.append(assistant)
                    at = len(out) - 1
                    counts.new(tokens)
                else:
                    counts.add(at, tokens)
                if text:
                    assistant["content"] = f"{assistant['content']}\n{text}" if assistant["content"] else text
                assistant["tool_calls"].extend(
                    {"id": i, "type": "function", "function": {"name": n, "arguments": arguments_json(a)}}
                    for i, n, a in item.calls)
            elif text:
                role = item.role if item.role in ("system", "user", "assistant", "developer") else "user"
                if summary_as_user and item.event.type == "Summary":  # it opens a turn (opens_turn)
                    role = "user"
                out.append({"role": role, "content": text})
                counts.new(tokens)
            else:
                counts.carry += tokens
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


def _anthropic(units: list[list[Item]], strip_thinking: bool, counts: _Counts) -> list[dict[str, Any]]:
    """Messages API turns: tool_use/tool_result blocks, consecutive same-role turns merged."""
    out: list[dict[str, Any]] = []
    for item in (i for unit in units for i in unit):
        role, blocks = _anthropic_blocks(item, strip_thinking)
        tokens = _item_tokens(item, strip_thinking)
        if not blocks:
            counts.carry += tokens
        elif out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
            counts.add(len(out) - 1, tokens)
        else:
            out.append({"role": role, "content": blocks})
            counts.new(tokens)
    return out


def build_messages(
    *, fmt: str, prefix: str, summary: str, suffix: str, units: list[list[Item]],
    strip_thinking: bool, summary_as_user: bool = True,
) -> dict[str, Any]:
    """The messages (and for anthropic, `system`) from the chosen texts and events. Pure.
    `summary_as_user`: openai shows a collapse's summary as a user message, as anthropic does
    (false only to rebuild a render recorded before it did: selectors/renders.py)."""
    return build_counted(fmt=fmt, prefix=prefix, summary=summary, suffix=suffix, units=units,
                         strip_thinking=strip_thinking, summary_as_user=summary_as_user)[0]


def build_counted(
    *, fmt: str, prefix: str, summary: str, suffix: str, units: list[list[Item]],
    strip_thinking: bool, summary_as_user: bool = True, section_tokens: tuple[int, int, int] | None = None,
) -> tuple[dict[str, Any], dict[str, list[int]]]:
    """build_messages, and each system block's and message's tokens as tokens.request_tokens
    counts them ({"system": [...], "messages": [...]}, in the body's order): a section's text
    (`section_tokens`, when the caller counted them already) or an event's stored count,
    framed. They add up to the render's total less its tools."""
    texts = (prefix, summary, suffix)
    known = section_tokens or tuple(count_tokens(t) for t in texts)
    sections = [(t, framed(n)) for t, n in zip(texts, known, strict=True)]
    counts = _Counts()
    if fmt == "anthropic":
        system = [{"type": "text", "text": t} for t, _ in sections if t]
        messages = _anthropic(units, strip_thinking, counts)
        return {"system": system, "messages": messages}, _counts_done(
            counts, [n for t, n in sections if t], [], [])
    head = [(t, n, name) for (t, n), name in zip(sections[:2], ("prefix", "summary"), strict=True) if t]
    tail = [(suffix, sections[2][1], "suffix")] if suffix else []
    if fmt == "openai":
        history = _openai(units, summary_as_user, counts)
        return ({"messages": [{"role": "system", "content": t} for t, _, _ in head] + history
                 + [{"role": "system", "content": t} for t, _, _ in tail]},
                _counts_done(counts, [], [n for _, n, _ in head], [n for _, n, _ in tail]))
    raw = dict(zip(("prefix", "summary", "suffix"), known, strict=True))
    before: list[dict[str, Any]] = [{"role": "system", "section": name, "content": t, "tokens": raw[name]}
                                    for t, _, name in head]
    after: list[dict[str, Any]] = [{"role": "system", "section": name, "content": t, "tokens": raw[name]}
                                   for t, _, name in tail]
    history = _raw(units, strip_thinking, counts)
    return {"messages": before + history + after}, _counts_done(
        counts, [], [n for _, n, _ in head], [n for _, n, _ in tail])


def _counts_done(counts: _Counts, system: list[int], head: list[int], tail: list[int]
                 ) -> dict[str, list[int]]:
    """{"system": the system blocks', "messages": the system texts before history, history's,
    those after it}; an event that went into no message, with none in history, counts with
    the last piece there is."""
    history = counts.done()
    messages = [*head, *history, *tail]
    if counts.carry:
        last = messages if messages else system
        if last:
            last[-1] += counts.carry
    return {"system": system, "messages": messages}


def prefix_hash(prefix: str) -> str:
    return hashlib.sha256(prefix.encode()).hexdigest()


def effective_strip(fmt: str, strip_thinking: bool) -> bool:
    """Chat Completions messages cannot carry thinking, so openai renders always strip it."""
    return strip_thinking or fmt == "openai"
