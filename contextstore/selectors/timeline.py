"""Reads behind the thread page's timeline: keyset pages of events by seq, summary cards.

Every read is bounded by a page size and walks the (thread, seq) index from a cursor, so the
cost of a page does not grow with the length of the thread's history (no OFFSET, no COUNT).
"""

from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet, Subquery

from contextstore.models import Collapse, Event, Thread
from contextstore.selectors.calls import LLMCall, call_groups, tool_name, tool_pairs
from contextstore.selectors.events import text_candidates, text_match
from contextstore.selectors.scores import comment_counts

PAGE_SIZE = 50
TAIL_LIMIT = 200
CARD_LIMIT = 200
MAX_ROWS = 300  # rows the browser keeps in the timeline; app.js drops far pages beyond it
# Purely technical events stay folded behind "runtime events"; LLM calls show as call cards.
FOLDED_TYPES = ("BeforeAgentCall", "AfterAgentCall", "LLMCallEnd")


@dataclass
class Item:
    """One row of the timeline: an event, an LLM call card (what it produced inside), a tool
    card (a ToolCall and its results), the end of a call that started on an older page, or a
    summary card standing for a collapsed range."""

    kind: str  # "event", "call", "call-end", "tool" or "collapse"
    key: int  # where it stands: an event's seq, a call's start, a collapse's first position
    event: Event | None = None
    collapse: Collapse | None = None
    call: LLMCall | None = None
    results: list[Event] = field(default_factory=list)  # a ToolCall's results, in one card
    tool: str = ""  # the tool's name, for a ToolCall with results
    run_head: Any = None  # the Run whose turn starts at this row (a header above it)
    outputs: list["Item"] = field(default_factory=list)  # a call card's outputs, as rows
    last: int = 0  # the newest seq the row shows (a card holds events after its key)
    continues: int | None = None  # a call ending on a newer page: its LLMComplete's seq
    result_later: bool = False  # a tool in such a card: its result may be on the newer page

    @property
    def tool_ms(self) -> int | None:
        """From the tool call to its first result; unknown (None) when no result was logged or
        both were logged at the same instant."""
        if not self.results or self.event is None:
            return None
        ms = int((self.results[0].occurred_at - self.event.occurred_at).total_seconds() * 1000)
        return ms if ms > 0 else None


@dataclass
class Page:
    items: list[Item] = field(default_factory=list)
    older: int | None = None  # seq to pass as `before` for the next older page; None at the start
    newer: int | None = None  # seq to pass as `newer` for the next newer page (pages around a seq)
    last_seq: int = 0  # newest seq looked at; the live tail asks for what comes after it


def _events(thread: Thread, filters: dict[str, Any]) -> QuerySet[Event]:
    statuses = [Event.Status.ACTIVE] + ([Event.Status.CLEARED] if filters.get("cleared") else [])
    # Collapse summaries show as cards at their range's place, not at the seq they were written.
    # NOT IN over the thread's collapses (a small hashed set) keeps the plan a backward walk of
    # the (thread, seq) index that stops after one page; an anti-join would read every event.
    summaries = Collapse.objects.filter(thread=thread).values("summary_event_id")
    qs = (
        Event.objects.filter(thread=thread, status__in=statuses)
        .exclude(pk__in=Subquery(summaries)).select_related("run")
    )
    if filters.get("type"):
        qs = qs.filter(type__in=filters["type"])
    elif not filters.get("runtime"):
        qs = qs.exclude(type__in=FOLDED_TYPES)
    if filters.get("q"):
        found = text_candidates(thread, filters["q"])
        if found is not None:  # a big thread: read the candidates by seq, not by walking it
            qs = qs.filter(seq__in=found)
        qs = qs.filter(text_match(filters["q"]))
    if filters.get("run"):
        qs = qs.filter(run__run_id=filters["run"])
    if filters.get("call"):
        qs = qs.filter(call_id=filters["call"])
    return qs


def _cards(thread: Thread, filters: dict[str, Any], low: int, high: int | None) -> list[Item]:
    """Active collapses whose range starts in [low, high), except ones nested in another."""
    if filters.get("narrow"):
        return []
    statuses = [Event.Status.ACTIVE] + ([Event.Status.CLEARED] if filters.get("cleared") else [])
    qs = Collapse.objects.filter(
        thread=thread, undone_at__isnull=True, start_position__gte=low,
        summary_event__status__in=statuses,
    ).select_related("summary_event")
    if high is not None:
        qs = qs.filter(start_position__lt=high)
    cards = list(qs.order_by("-start_position")[:CARD_LIMIT])
    with_originals(cards)
    return [Item("collapse", c.start_position, collapse=c) for c in cards]


def with_originals(collapses: list[Collapse], depth: int = 32) -> None:
    """Set `originals` on each collapse: the original events it stands for, an earlier summary
    inside it counted as the events that summary covers (as the extractive summary's "Summary
    of N events" counts them), so a card's number and its text are the same value. One query
    per level of nesting."""
    owner = {c.pk: c for c in collapses}
    for c in collapses:
        c.originals = c.event_count  # type: ignore[attr-defined]
    level = list(owner)
    for _ in range(depth):
        if not level:
            break
        nested = Collapse.objects.filter(summary_event__collapse_id__in=level).values_list(
            "pk", "event_count", "summary_event__collapse_id")
        level = []
        for pk, count, parent in nested:
            root = owner[parent]
            root.originals += count - 1  # type: ignore[attr-defined]  # the summary stood for 1
            owner[pk] = root
            level.append(pk)


def _tool_rows(events: list[Event], *, in_card: bool = False) -> list[Item]:
    """Events oldest first as rows, a ToolCall and its results as one tool card (in a call
    card every ToolCall is one, so a call whose result never came says so)."""
    tools, answered = tool_pairs(events=events)
    items = []
    for e in events:
        if e.seq in answered:
            continue
        if e.seq in tools or (in_card and e.type == "ToolCall"):
            results = tools.get(e.seq, [])
            items.append(Item("tool", e.seq, event=e, results=results, tool=tool_name(e),
                              last=max([e.seq] + [r.seq for r in results])))
        else:
            items.append(Item("event", e.seq, event=e, last=e.seq))
    return items


def _items(thread: Thread, events: list[Event]) -> list[Item]:
    """Events oldest first as rows: an LLM call becomes one card at its start holding what it
    produced (selectors/calls.call_groups), a ToolCall and its results one tool card."""
    groups, ends, hidden = call_groups(thread=thread, events=events)
    newest = events[-1].seq if events else 0
    items = []
    for g in groups:
        anchor = g.call.start or g.call.end
        end = g.call.end
        last = max([g.at] + [o.seq for o in g.outputs] + ([end.seq] if end and end.seq <= newest else []))
        outputs = _tool_rows(g.outputs, in_card=True)
        continues = end.seq if end and end.seq > newest else None
        for row in outputs:
            row.result_later = continues is not None
        items.append(Item("call", g.at, event=anchor, call=g.call, outputs=outputs, last=last,
                          continues=continues))
    items += [Item("call-end", seq, event=call.end, call=call, last=seq) for seq, call in ends.items()]
    items += _tool_rows([e for e in events if e.seq not in hidden and e.seq not in ends
                         and e.type != "LLMCallStart"])
    items.sort(key=lambda item: item.key)
    # The comment badge: one grouped query for the page (a call's comments are on its seq).
    calls = [g.call for g in groups] + list(ends.values())
    counts = comment_counts(thread=thread, seqs=[e.seq for e in events] + [c.seq for c in calls])
    for e in events:
        e.comment_count = counts.get(e.seq, 0)  # type: ignore[attr-defined]
    for item in items:
        if item.call is not None and item.event is not None:
            item.event.comment_count = counts.get(item.call.seq, 0)  # type: ignore[attr-defined]
    return items


def _run_heads(items: list[Item], previous_run_id: int | None = None) -> None:
    """Mark where a run's turn starts, so the page groups rows by run under a header."""
    current = previous_run_id
    for item in items:
        if item.event is None:
            continue
        if item.event.run_id and item.event.run_id != current:
            item.run_head = item.event.run
        current = item.event.run_id


def timeline_page(
    *, thread: Thread, filters: dict[str, Any], before: int | None = None, size: int = PAGE_SIZE
) -> Page:
    """The newest `size` matching events before seq `before`, oldest first, with their cards."""
    qs = _events(thread, filters)
    if before is not None:
        qs = qs.filter(seq__lt=before)
    events = list(qs.order_by("-seq")[: size + 1])
    more = len(events) > size
    events = events[:size]
    low = events[-1].seq if more else 0
    items = _items(thread, events[::-1])
    items += _cards(thread, filters, low, before)
    items.sort(key=lambda item: item.key)
    _run_heads(items)
    return Page(items=items, older=low if more else None, last_seq=thread.last_seq)


def timeline_around(
    *, thread: Thread, filters: dict[str, Any], around: int, size: int = PAGE_SIZE
) -> Page:
    """A page centred on seq `around` (a permalink): half older, half newer, both walked from
    the seq on the (thread, seq) index, so it costs the same at seq 1 or 100,000."""
    half = max(size // 2, 1)
    qs = _events(thread, filters)
    older = list(qs.filter(seq__lte=around).order_by("-seq")[: half + 1])
    newer = list(qs.filter(seq__gt=around).order_by("seq")[: half + 1])
    more_older, more_newer = len(older) > half, len(newer) > half
    events = older[:half][::-1] + newer[:half]
    if not events:
        return Page(last_seq=thread.last_seq)
    low = events[0].seq if more_older else 0
    high = events[-1].seq if more_newer else None
    items = _items(thread, events) + _cards(thread, filters, low, None if high is None else high + 1)
    items.sort(key=lambda item: item.key)
    _run_heads(items)
    return Page(items=items, older=low if more_older else None, newer=high,
                last_seq=thread.last_seq)


def timeline_newer(
    *, thread: Thread, filters: dict[str, Any], after: int, size: int = PAGE_SIZE
) -> Page:
    """The next `size` matching events after seq `after`, oldest first (scrolling down from a
    permalink), with the summary cards that start in between."""
    events = list(_events(thread, filters).filter(seq__gt=after).order_by("seq")[: size + 1])
    more = len(events) > size
    events = events[:size]
    high = events[-1].seq if more and events else None
    items = _items(thread, events) + _cards(thread, filters, after + 1,
                                            None if high is None else high + 1)
    items.sort(key=lambda item: item.key)
    previous = Event.objects.filter(thread=thread, seq=after).values_list("run_id", flat=True).first()
    _run_heads(items, previous)
    return Page(items=items, newer=high, last_seq=thread.last_seq)


def timeline_tail(*, thread: Thread, filters: dict[str, Any], after: int) -> Page:
    """Events appended after seq `after`, up to the thread's last seq as read with the thread."""
    qs = _events(thread, filters).filter(seq__gt=after, seq__lte=thread.last_seq)
    events = list(qs.order_by("seq")[:TAIL_LIMIT])
    last = events[-1].seq if len(events) == TAIL_LIMIT else max(thread.last_seq, after)
    items = _items(thread, events)
    before = Event.objects.filter(thread=thread, seq=after).values_list("run_id", flat=True).first()
    _run_heads(items, before)
    return Page(items=items, last_seq=last)


def collapse_members(
    *, collapse: Collapse, after: int = 0, size: int = PAGE_SIZE * 4
) -> tuple[list[Event], int | None]:
    """The originals of a collapse in working-context order, a page at a time."""
    members = list(
        Event.objects.filter(collapse=collapse, position__gt=after).select_related("run")
        .order_by("position")[: size + 1]
    )
    more = len(members) > size
    members = members[:size]
    return members, (members[-1].position if more else None)
