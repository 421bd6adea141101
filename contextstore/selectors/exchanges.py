"""The tool exchanges a working-context range would split (docs/api.md, "Ranges and undo").

An exchange is a unit of render_format.group_units: a tool call (or an assistant message
carrying calls) with all its results and the asides logged between them. A collapse, summary
or fork whose boundary falls inside one would leave calls without their results (or results
without their calls) on one side, which every render then drops; ranges.respect_exchanges
refuses such a range or widens it to the whole exchange.

Only the rows around each boundary are read: from the nearest event before it that closes any
open unit (a user message or a summary: group_units starts afresh after one) to the nearest
such event at or after it, whatever the thread's length.
"""

from collections.abc import Iterator

from django.db.models import QuerySet

from contextstore.models import Event
from contextstore.ranges import Exchange, respect_exchanges
from contextstore.render_format import Row, event_class, group_units
from contextstore.toolcalls import event_calls

CHUNK = 256


def _rows(thread_id: int) -> QuerySet:
    # What a render shows: a split among invisible events harms no render.
    return Event.objects.filter(thread_id=thread_id, status=Event.Status.ACTIVE, visible=True)


def _closes(type_: str, role: str) -> bool:
    """An event group_units yields alone whatever came before it (it closes any open unit)."""
    kind, shown_as, _ = event_class(type_, role)
    return kind == "other" and shown_as != "assistant"


def _sync(rows: QuerySet) -> int | None:
    """The position of the first row of `rows` (ordered) that closes any open unit."""
    for position, type_, role in rows.values_list("position", "type", "role").iterator(chunk_size=CHUNK):
        if _closes(type_, role):
            return position
    return None


def _units_around(thread_id: int, boundary: int) -> Iterator[list[Row]]:
    """The units of the rows around `boundary` (a position: the first one on its newer side),
    grouped exactly as a walk over the whole working context groups them."""
    rows = _rows(thread_id)
    low = _sync(rows.filter(position__lt=boundary).order_by("-position"))
    high = _sync(rows.filter(position__gte=boundary).order_by("position"))
    window = rows
    if low is not None:
        window = window.filter(position__gte=low)
    if high is not None:
        window = window.filter(position__lte=high)

    def read() -> Iterator[Row]:
        for position, seq, type_, role, pk in window.order_by("-position").values_list(
                "position", "seq", "type", "role", "pk").iterator(chunk_size=CHUNK):
            kind, shown_as, opens = event_class(type_, role)
            yield Row(position, seq, 0, kind, shown_as, pk, opens)

    return group_units(read())


def exchanges_across(*, thread_id: int, start_position: int | None,
                     end_position: int | None) -> list[Exchange]:
    """The tool exchanges with events both inside [start_position, end_position] and outside
    it (None: an open end, which splits nothing), oldest first."""
    boundaries = [b for b in (start_position, None if end_position is None else end_position + 1)
                  if b is not None]
    split: dict[int, list[Row]] = {}
    for boundary in boundaries:
        for unit in _units_around(thread_id, boundary):
            if unit[-1].kind == "result":  # results with no call: nothing to split them from
                continue
            if unit[-1].position < boundary <= unit[0].position:
                split[unit[-1].position] = unit
    if not split:
        return []
    callers = [r.pk for unit in split.values() for r in unit if r.kind == "call" or r.role == "assistant"]
    ids: dict[int, list[str]] = {}
    for pk, seq, type_, parts, data in Event.objects.filter(pk__in=callers).values_list(
            "pk", "seq", "type", "parts", "data"):
        ids[pk] = [c.id or f"call_{seq}_{n}" for n, c in enumerate(event_calls(type_, parts, data))]
    found = []
    for first in sorted(split):
        unit = split[first][::-1]  # oldest first
        found.append(Exchange(
            first_position=unit[0].position, last_position=unit[-1].position,
            call_ids=[i for r in unit for i in ids.get(r.pk, [])],
            # the events that make calls (an assistant aside, an Error logged as the
            # assistant's, makes none)
            call_positions=[r.position for r in unit if ids.get(r.pk)],
            result_positions=[r.position for r in unit if r.kind == "result"]))
    return found


def range_respecting(*, thread_id: int, start_position: int | None, end_position: int | None,
                     widen: bool) -> tuple[int | None, int | None]:
    """The range to use for a collapse, summary or fork: ranges.respect_exchanges over the
    exchanges it would split (refused with `splits_tool_exchange`, or widened)."""
    found = exchanges_across(thread_id=thread_id, start_position=start_position,
                             end_position=end_position)
    return respect_exchanges(start_position, end_position, found, widen=widen)
