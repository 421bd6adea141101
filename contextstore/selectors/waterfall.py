"""A run's waterfall from its recorded events (any ingest path, the API included): each LLM
call (LLMCallStart → LLMComplete) and tool call (ToolCall → its first ToolResult) as a bar on
the run's time axis, with its duration and the idle gap before it.

A duration is known only when both ends were logged at different instants, or the agent
reported it (an LLMComplete's latency_ms); otherwise it is unknown (None, shown "—"), never
0 ms. The run's events are read through the (run, seq) index, at most MAX_EVENTS of them."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from contextstore.models import Event, Run
from contextstore.selectors.calls import CALL_END, CALL_START, LLMCall, call_key, tool_name, tool_pairs

MAX_EVENTS = 2000
TICKS = 4  # axis labels at 0, 1/4, … of the run's time


@dataclass
class Bar:
    kind: str  # "call" or "tool"
    label: str
    seq: int  # the event that opens it (a permalink)
    start: datetime
    end: datetime | None  # None: its length is unknown
    failed: bool = False
    offset_ms: int = 0
    gap_ms: int | None = None  # idle since the bars before it ended; None for the first/unknown
    left: float = 0.0  # percent of the run's time
    width: float = 0.0

    @property
    def duration_ms(self) -> int | None:
        return None if self.end is None else _ms(self.end - self.start)


@dataclass
class Waterfall:
    bars: list[Bar]
    total_ms: int | None  # first start to last known end; None when no time passed
    ticks: list[int]  # ms at 0, 1/4, … 1 of the run's time: the axis labels
    truncated: bool  # the run had more events than were read


def _ms(delta: timedelta) -> int:
    return int(delta.total_seconds() * 1000)


def _call_bar(call: LLMCall) -> Bar:
    anchor = call.start or call.end
    assert anchor is not None
    latency = call.latency_ms
    end = call.end.occurred_at if call.end and latency is not None else None
    start = anchor.occurred_at
    if call.start is None and end is not None and latency is not None:
        start = end - timedelta(milliseconds=latency)  # only the end and a reported latency
    elif call.start is not None and end is not None and _ms(end - start) <= 0 and latency is not None:
        end = start + timedelta(milliseconds=latency)  # logged together; the agent's figure
    label = f"LLM call {call.model}".strip()
    return Bar("call", label, anchor.seq, start, end,
               failed=bool(call.end and call.end.is_error) or call.finish_reason == "error")


def run_waterfall(*, run: Run) -> Waterfall:
    events = list(Event.objects.filter(run=run, type__in=(CALL_START, CALL_END, "ToolCall", "ToolResult"))
                  .select_related("run").order_by("seq")[:MAX_EVENTS + 1])
    truncated = len(events) > MAX_EVENTS
    events = events[:MAX_EVENTS]
    bars: list[Bar] = []
    open_starts: dict[tuple, Event] = {}
    for e in events:
        if e.type == CALL_START:
            if (earlier := open_starts.pop(call_key(e), None)) is not None:
                bars.append(_call_bar(LLMCall(start=earlier, end=None)))
            open_starts[call_key(e)] = e
        elif e.type == CALL_END:
            bars.append(_call_bar(LLMCall(start=open_starts.pop(call_key(e), None), end=e)))
    bars += [_call_bar(LLMCall(start=s, end=None)) for s in open_starts.values()]
    tools, _ = tool_pairs(events=events)
    for e in events:
        if e.type == "ToolCall":
            results = tools.get(e.seq, [])
            end = results[0].occurred_at if results and results[0].occurred_at > e.occurred_at else None
            bars.append(Bar("tool", tool_name(e), e.seq, e.occurred_at, end,
                            failed=any(r.is_error for r in results) or e.is_error))
    bars.sort(key=lambda b: (b.start, b.seq))
    if not bars:
        return Waterfall([], None, [], truncated)
    begin = bars[0].start
    finish = max([b.end for b in bars if b.end] + [b.start for b in bars])
    total = _ms(finish - begin)
    busy_until: datetime | None = None
    for i, b in enumerate(bars):
        b.offset_ms = _ms(b.start - begin)
        # idle since everything before it ended; unknown when the bar just before has no end
        if i and bars[i - 1].end is not None and busy_until is not None:
            b.gap_ms = max(_ms(b.start - busy_until), 0)
        if b.end is not None:
            busy_until = b.end if busy_until is None else max(busy_until, b.end)
        if total > 0:
            b.left = round(100 * b.offset_ms / total, 2)
            b.width = round(max(100 * (b.duration_ms or 0) / total, 0.5), 2)
        else:
            b.width = 0.5
        b.left = min(b.left, 99.5)
    ticks = [total * i // TICKS for i in range(TICKS + 1)] if total > 0 else []
    return Waterfall(bars, total if total > 0 else None, ticks, truncated)
