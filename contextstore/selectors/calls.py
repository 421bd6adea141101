"""Model calls and tool calls as the thread page shows them: an LLMCallStart paired with its
LLMComplete (a call card, what the call sent), a ToolCall paired with its results (a tool
card). How two calls differ, and what that does to the prompt cache: selectors/cache.py."""

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from contextstore.models import Event, RenderRecord, Thread
from contextstore.selectors import renders
from contextstore.toolcalls import event_calls, result_call_id
from contextstore.usage import event_cost, event_usage

# A model call is logged as an LLMCallStart and, when it returns, an LLMComplete (usage, cost,
# finish reason). They are paired by key: the same call_id when the LLMComplete has one, else
# the same run, else (neither set) the nearest start before it in the thread. An LLMComplete
# pairs with the latest start before it with its key; a start pairs with the first
# LLMComplete after it with its key. Both searches look at a bounded number of LLM-call rows
# through the (thread, type, seq) index, so a pair costs the same in a thread of any length.

CALL_START = "LLMCallStart"
CALL_END = "LLMComplete"
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
        """From the start's to the end's time; else what the agent reported (latency_ms)."""
        if self.start and self.end:
            return int((self.end.occurred_at - self.start.occurred_at).total_seconds() * 1000)
        reported = self._data("latency_ms")
        return int(reported) if isinstance(reported, int | float) and not isinstance(reported, bool) else None

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


def calls_of_page(*, thread: Thread, events: list[Event]) -> tuple[dict[int, LLMCall], set[int]]:
    """Calls for a page of events (oldest first): {seq of the event that shows the card: call}
    and the seqs of starts folded into a card further down the same page. A card stands at its
    LLMComplete; a start whose end is not on the page gets a card of its own (still running,
    or ended on a newer page)."""
    calls: dict[int, LLMCall] = {}
    folded: set[int] = set()
    open_starts: dict[tuple[str, Any], Event] = {}
    for e in events:
        if e.type == CALL_START:
            open_starts[call_key(e)] = e
        elif e.type == CALL_END:
            start = open_starts.pop(call_key(e), None)
            if start is not None:
                folded.add(start.seq)
            else:
                start = call_start_of(thread=thread, end=e)
            calls[e.seq] = LLMCall(start=start, end=e)
    for start in open_starts.values():
        calls[start.seq] = LLMCall(start=start, end=call_end_of(thread=thread, start=start))
    return calls, folded


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
            found = renders.llm_call_request(event=event)
            request = {"tools": request["tools"] or found["tools"],
                       "params": request["params"] or found["params"]}
    return {**_sent(thread, call), **request}


def _sent(thread: Thread, call: LLMCall) -> dict[str, Any]:
    if call.render_id:
        record = RenderRecord.objects.filter(thread=thread, pk=call.render_id).first() \
            if renders.is_uuid(call.render_id) else None
        if record is not None:
            body = renders.render_rebuild(record=record)
            return {"source": "render", "record": record, "format": body["format"],
                    "system": body.get("system") or [], "messages": body["messages"],
                    "expired": renders.render_expired(record)}
    for event in (call.start, call.end):
        if event is not None:
            messages = renders.llm_call_messages(event=event)
            if messages is not None:
                return {"source": "messages", "record": None, "format": None, "system": [],
                        "messages": messages}
    return {"source": None, "record": None, "format": None, "system": [], "messages": []}


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
