"""Model calls and tool calls as the thread page shows them: an LLMCallStart paired with its
LLMComplete (a call card, what the call sent), a ToolCall paired with its results (a tool
card). How two calls differ, and what that does to the prompt cache: selectors/cache.py."""

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from contextstore.models import Event, RenderRecord, Thread
from contextstore.render_format import shown_text
from contextstore.selectors import renders
from contextstore.toolcalls import ToolCall, data_calls, event_calls, part_calls, result_call_id
from contextstore.usage import event_cost, event_usage

# A model call is logged as an LLMCallStart and, when it returns, an LLMComplete (usage, cost,
# finish reason). They are paired by key: the same call_id when the LLMComplete has one, else
# the same run, else (neither set) the nearest start before it in the thread. An LLMComplete
# pairs with the latest start before it with its key; a start pairs with the first
# LLMComplete after it with its key. Both searches look at a bounded number of LLM-call rows
# through the (thread, type, seq) index, so a pair costs the same in a thread of any length.

CALL_START = "LLMCallStart"
CALL_END = "LLMComplete"
RUNTIME_ROWS = (CALL_END, "LLMCallEnd", "BeforeAgentCall", "AfterAgentCall")
PAIR_WINDOW = 20  # LLM-call rows looked at on either side to find a partner
SENT_PAGE = 100  # messages per page of an "as sent" view


@dataclass
class LLMCall:
    """One model call: its LLMCallStart and its LLMComplete (either may be missing)."""

    start: Event | None
    end: Event | None

    @property
    def seq(self) -> int:
        """The seq that names the call in URLs: its start's, else its end's."""
        return (self.start or self.end).seq  # type: ignore[union-attr]

    def _data(self, key: str) -> Any:
        for event in (self.end, self.start):
            if event is not None and isinstance(event.data, dict) and event.data.get(key) is not None:
                return event.data[key]
        return None

    @property
    def seq_call_id(self) -> str:
        """The call_id the call was logged with, if any."""
        return (self.start or self.end).call_id or ""  # type: ignore[union-attr]

    @property
    def model(self) -> str:
        return str(self._data("model") or "")

    @property
    def tokens(self) -> tuple[int, int]:
        return event_usage(self.end) if self.end else (0, 0)

    @property
    def cost(self) -> Decimal:
        return event_cost(self.end) if self.end else Decimal(0)

    @property
    def finish_reason(self) -> str:
        return str(self._data("finish_reason") or self._data("stop_reason") or "")

    @property
    def latency_ms(self) -> int | None:
        """From the start's to the end's time; else what the agent reported (latency_ms); else
        unknown. Two events logged at the same instant (one batch without times) measured
        nothing: that is unknown too, never "0 ms"."""
        if self.start and self.end:
            measured = int((self.end.occurred_at - self.start.occurred_at).total_seconds() * 1000)
            if measured > 0:
                return measured
        reported = self._data("latency_ms")
        if isinstance(reported, int | float) and not isinstance(reported, bool) and reported > 0:
            return int(reported)
        return None

    @property
    def render_id(self) -> str | None:
        value = self._data("render_id")
        return str(value) if value else None

    @property
    def has_messages(self) -> bool:
        return isinstance(self._data("message_hashes"), list)

    @property
    def can_show_sent(self) -> bool:
        return bool(self.render_id) or self.has_messages


def call_key(event: Event) -> tuple[str, Any]:
    if event.call_id:
        return ("call", event.call_id)
    if event.run_id:
        return ("run", event.run_id)
    return ("thread", None)


def call_start_of(*, thread: Thread, end: Event) -> Event | None:
    """The LLMCallStart an LLMComplete closes (see the pairing rule above)."""
    key = call_key(end)
    for start in (Event.objects.filter(thread=thread, type=CALL_START, seq__lt=end.seq)
                  .select_related("run").order_by("-seq")[:PAIR_WINDOW]):
        if call_key(start) == key:
            return start
    return None


def call_end_of(*, thread: Thread, start: Event) -> Event | None:
    """The LLMComplete that closes an LLMCallStart, if it was logged."""
    key = call_key(start)
    for end in (Event.objects.filter(thread=thread, type=CALL_END, seq__gt=start.seq)
                .select_related("run").order_by("seq")[:PAIR_WINDOW]):
        if call_key(end) == key:
            return end
    return None


# What a call produced, shown inside its card: thinking, reply text, tool calls and (nested
# under their call) tool results. Other events (user input, errors, feedback) stay rows.
OUTPUT_TYPES = ("Reasoning", "LLMOutput", "ToolCall", "ToolResult")


def is_output(event: Event) -> bool:
    return event.type in OUTPUT_TYPES or (event.type == "Message" and event.role == "assistant")


@dataclass
class CallGroup:
    """A call card on a page: the call, the seq it stands at and the outputs it holds."""

    call: LLMCall
    at: int
    outputs: list[Event]


def call_groups(
    *, thread: Thread, events: list[Event]
) -> tuple[list[CallGroup], dict[int, LLMCall], set[int]]:
    """The call cards of a page of events (oldest first), the LLMCompletes whose start is on an
    older page ({end seq: call}, shown as a slim "call ended" row) and the seqs shown inside a
    card rather than as rows of their own.

    A card stands at its LLMCallStart (a call whose start was never logged: at its first output
    on the page, else at its LLMComplete). An output belongs to the call whose call_id it
    carries; one without a call_id (or naming no call) to the latest call started before it in
    its run, until another event of that run (user input, an error, feedback) ends the turn; a
    tool result to the card holding the tool call it answers. Only events on the page are
    grouped: outputs on a newer page show as rows there (their call link filters the call)."""
    groups: dict[int, CallGroup] = {}  # by the seq of the call's start, else its end
    ends: dict[int, LLMCall] = {}
    hidden: set[int] = set()
    open_starts: dict[tuple[str, Any], Event] = {}
    for e in events:
        if e.type == CALL_START:
            open_starts[call_key(e)] = e
            groups[e.seq] = CallGroup(LLMCall(start=e, end=None), e.seq, [])
        elif e.type == CALL_END:
            start = open_starts.pop(call_key(e), None)
            if start is not None:
                groups[start.seq].call.end = e
                hidden.add(e.seq)
            elif (start := call_start_of(thread=thread, end=e)) is not None:
                ends[e.seq] = LLMCall(start=start, end=e)
            else:
                groups[e.seq] = CallGroup(LLMCall(start=None, end=e), e.seq, [])
                hidden.add(e.seq)
    for start in open_starts.values():
        groups[start.seq].call.end = call_end_of(thread=thread, start=start)

    by_call_id = {g.call.end.call_id: g for g in groups.values()  # calls that never logged a start
                  if g.call.start is None and g.call.end is not None and g.call.end.call_id}
    current: dict[int | None, CallGroup] = {}  # the open call of each run (None: no run)
    by_tool_id: dict[str, CallGroup] = {}
    for e in events:
        if e.type == CALL_START:
            group = groups[e.seq]
            current[e.run_id] = group
            if e.call_id:
                by_call_id[e.call_id] = group
        elif e.type in RUNTIME_ROWS:
            continue
        elif is_output(e):
            named = result_call_id(e.parts, e.data) if e.type == "ToolResult" else None
            owner = (by_tool_id.get(named) if named else None) or by_call_id.get(e.call_id or "")
            if owner is None and (open_call := current.get(e.run_id)) is not None:
                if not e.call_id or not open_call.call.seq_call_id:
                    owner = open_call
            if owner is not None:
                owner.outputs.append(e)
                hidden.add(e.seq)
                for c in event_calls(e.type, e.parts, e.data):
                    if c.id:
                        by_tool_id[c.id] = owner
        else:
            current.pop(e.run_id, None)
    for group in groups.values():
        if group.call.start is None and group.outputs:
            group.at = min(group.at, group.outputs[0].seq)
    return sorted(groups.values(), key=lambda g: g.at), ends, hidden


def llm_call_at(*, thread: Thread, seq: int) -> LLMCall | None:
    """The call whose LLMCallStart or LLMComplete is at `seq`."""
    event = (Event.objects.filter(thread=thread, seq=seq, type__in=(CALL_START, CALL_END))
             .select_related("run").first())
    if event is None:
        return None
    if event.type == CALL_START:
        return LLMCall(start=event, end=call_end_of(thread=thread, start=event))
    return LLMCall(start=call_start_of(thread=thread, end=event), end=event)


def llm_call_previous(*, thread: Thread, call: LLMCall) -> LLMCall | None:
    """The call logged before this one in the thread (any key)."""
    anchor = call.start or call.end
    kind = CALL_START if call.start else CALL_END
    prev = (Event.objects.filter(thread=thread, type=kind, seq__lt=anchor.seq)  # type: ignore[union-attr]
            .order_by("-seq").values_list("seq", flat=True).first())
    return llm_call_at(thread=thread, seq=prev) if prev is not None else None


def llm_call_sent(*, thread: Thread, call: LLMCall) -> dict[str, Any]:
    """What the call sent: its render record rebuilt, or the messages the agent logged, with
    the tools and params it logged. `source` is "render", "messages" or None (nothing was
    attached)."""
    request: dict[str, Any] = {"tools": None, "params": {}}
    for event in (call.start, call.end):
        if event is not None:
            found = renders.llm_call_request(event=event, workspace_id=thread.workspace_id)
            request = {"tools": request["tools"] or found["tools"],
                       "params": request["params"] or found["params"]}
    return {**_sent(thread, call), **request}


def latest_tools(*, thread: Thread) -> list[Any]:
    """The tool definitions the thread's newest model call logged (`data.tools`): what its next
    request most likely sends too, so the dashboard's gauge and model view count them as the
    agent's render would (tokens.request_tokens); [] when it logged none."""
    start = Event.objects.filter(thread=thread, type=CALL_START).order_by("-seq").first()
    if start is None:
        return []
    tools = renders.llm_call_request(event=start, workspace_id=thread.workspace_id)["tools"]
    return tools if isinstance(tools, list) else []


def _sent(thread: Thread, call: LLMCall) -> dict[str, Any]:
    if call.render_id:
        record = RenderRecord.objects.filter(thread=thread, pk=call.render_id).first() \
            if renders.is_uuid(call.render_id) else None
        if record is not None:
            body, counts = renders.render_rebuild_counted(record=record)
            return {"source": "render", "record": record, "format": body["format"],
                    "system": body.get("system") or [], "messages": body["messages"],
                    "counts": counts, "expired": renders.render_expired(record)}
    for event in (call.start, call.end):
        if event is not None:
            messages, gone = renders.llm_call_logged(event=event, workspace_id=thread.workspace_id)
            if messages is not None:
                return {"source": "messages", "record": None, "format": None, "system": [],
                        "messages": messages, "expired": gone}
    return {"source": None, "record": None, "format": None, "system": [], "messages": []}


# ------------------------------------------------------------------ the reply

# "The reply of a call" is decided here alone; the replay page, the shared call page, dataset
# items and the API's llm-calls endpoint all read it through llm_call_reply. An agent logs
# what the model answered in one of these shapes:
# - output events (an LLMOutput, an assistant Message, ToolCalls, Reasoning) between the
#   call's start and its end, or right after its end (OTLP derivation writes the span's output
#   messages as assistant Messages and ToolCalls between the pair, each naming the span in
#   data.otel.span_id);
# - the LLMComplete itself: its content, parts and data.tool_calls.
REPLY_TYPES = ("LLMOutput", "ToolCall", "Reasoning")
REPLY_WINDOW = 40  # events looked at after the call's start for what it produced


@dataclass
class CallReply:
    """What a call answered: the events that hold it (none when only its LLMComplete does),
    its text and the tool calls the model made."""

    events: list[Event]
    text: str
    tool_calls: list[ToolCall]

    def as_message(self) -> dict[str, Any] | None:
        """The reply as one assistant message (None when nothing was logged): what a dataset
        item expects and the API returns."""
        if not self.text and not self.tool_calls:
            return None
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments}
                                     for c in self.tool_calls]
        return message


def _is_reply(event: Event) -> bool:
    return event.type in REPLY_TYPES or (event.type == "Message" and event.role == "assistant")


def _span_id(event: Event | None) -> str | None:
    data = event.data if event is not None and isinstance(event.data, dict) else {}
    otel = data.get("otel")
    return str(otel["span_id"]) if isinstance(otel, dict) and otel.get("span_id") else None


def _names_other_call(event: Event, call: LLMCall, span: str | None) -> bool:
    """An output that says it belongs elsewhere: another span, another run, or (not a tool
    call, whose call_id is often the tool call's own id) another call_id."""
    anchor = call.start or call.end
    if span is not None and (own := _span_id(event)) is not None and own != span:
        return True
    if anchor is not None and anchor.run_id and event.run_id and event.run_id != anchor.run_id:
        return True
    return (event.type != "ToolCall" and bool(event.call_id) and bool(call.seq_call_id)
            and event.call_id != call.seq_call_id)


def llm_call_reply(*, thread: Thread, call: LLMCall) -> CallReply:
    """What the call answered (see the shapes above). An LLMComplete that carries the reply
    (content, tool-call parts or data.tool_calls) is the call's own record of it and wins.
    Else output events are looked for from the call's start (else its end) within
    REPLY_WINDOW events, until the next call of its run starts, another call ends, or, once
    the call has ended, its run logs anything else (user input, a tool result, an error).
    Reasoning is kept in `events` but is not the reply's text."""
    end = call.end
    if end is not None:
        data = end.data if isinstance(end.data, dict) else {}
        listed = isinstance(data.get("tool_calls"), list)
        calls = part_calls(end.parts) or (data_calls(data) if listed else [])
        text = shown_text(end)
        if text or calls:
            return CallReply(events=[], text=text, tool_calls=calls)
    events = _reply_events(thread, call)
    answered = [e for e in events if e.type != "Reasoning"]
    # the text the model wrote: its text parts (Anthropic's blocks, Responses' output_text),
    # else its content
    text = "\n".join(t for e in answered if e.type != "ToolCall" and (t := shown_text(e)))
    calls = [c for e in answered for c in event_calls(e.type, e.parts, e.data)]
    return CallReply(events=events, text=text, tool_calls=calls)


def _reply_events(thread: Thread, call: LLMCall) -> list[Event]:
    anchor = call.start or call.end
    assert anchor is not None  # noqa: S101 - an LLMCall has a start or an end
    span = _span_id(call.start) or _span_id(call.end)
    run = anchor.run_id
    events: list[Event] = []
    rows = Event.objects.filter(thread=thread, seq__gt=anchor.seq).order_by("seq")[:REPLY_WINDOW]
    for event in rows:
        same_run = not run or not event.run_id or event.run_id == run
        if event.type == CALL_START and same_run:
            break
        if event.type in RUNTIME_ROWS:
            if call.end is not None and event.seq > call.end.seq and event.type == CALL_END and same_run:
                break
            continue
        if _is_reply(event):
            if not _names_other_call(event, call, span):
                events.append(event)
        elif same_run and (call.end is None or event.seq > call.end.seq):
            break
    return events


# ------------------------------------------------------------------ tool calls

def tool_pairs(*, events: list[Event]) -> tuple[dict[int, list[Event]], set[int]]:
    """ToolResults paired with the ToolCall they answer, within a page of events (oldest
    first): {ToolCall seq: its results} and the seqs of the results folded into a ToolCall's
    card. A result names its call by the tool-call id the call carries (parts or data, see
    toolcalls.py), else both share the event's call_id. A result whose call is on another
    page stays on its own."""
    by_tool_id: dict[str, Event] = {}
    by_call_id: dict[str, Event] = {}
    pairs: dict[int, list[Event]] = {}
    folded: set[int] = set()
    for e in events:
        if e.type == "ToolCall":
            for c in event_calls(e.type, e.parts, e.data):
                if c.id:
                    by_tool_id[c.id] = e
            if e.call_id:
                by_call_id[e.call_id] = e
            pairs[e.seq] = []
        elif e.type == "ToolResult":
            named = result_call_id(e.parts, e.data)
            call = (by_tool_id.get(named) if named else None) or by_call_id.get(e.call_id or named or "")
            if call is not None:
                pairs[call.seq].append(e)
                folded.add(e.seq)
    return {seq: results for seq, results in pairs.items() if results}, folded


def tool_name(event: Event) -> str:
    calls = event_calls(event.type, event.parts, event.data)
    if calls:
        return ", ".join(c.name for c in calls)
    data = event.data if isinstance(event.data, dict) else {}
    return str(data.get("tool") or data.get("name") or event.content[:60] or "tool")
