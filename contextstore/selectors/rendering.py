"""The context render's reads: what a model sees, planned from the database.

A render is prefix blocks, the summary, the newest history that fits the budget, suffix blocks.
It reads only what it returns: the history walk reads (position, tokens, type, role) newest
first and stops when the budget is spent, then loads just the events it keeps.

History is planned in whole turns (render_format.opens_turn): a user message (or a collapse's
summary, which stands for what it replaced) and everything after it up to the next one, so its
tool calls with all their results (and the asides, errors or notes, logged between them:
render_format.kind_of) and its thinking with the message it belongs to. A turn larger
than the budget left is skipped and the walk goes on with older turns (`on_oversize="skip"`), or
the walk stops there (`"stop"`); events before the first turn's start are left out, as are
results with no call before them. Every event left out is reported with its reason, and `fits`
is false whenever one was left out for size.

Stable starts (`start_chunk`, a share of the history budget; 0 turns it off): a render does not
slide its start one turn at a time, which would change the provider's cached prompt prefix on
every call once the window is full. Its start follows the *floor*: the smallest multiple of the
chunk (share × budget) at or above (working-context tokens − budget), counted in stored tokens
from the working context's oldest event (window_floor). As the thread grows the floor only moves
forward, a chunk at a time. The start is the turn reaching back over the floor while everything
from it on fits the budget, else the first turn starting at or after the floor (what follows the
floor always fits: it is at most the budget). So the start moves only when the floor moves and,
at most once between, when the turn over the floor stops fitting: it stays put over many calls,
no state is kept and the walk still reads only about the budget. A turn over the floor too large
for the budget is left out (skip) and nothing older comes in its place. Any other change to the
working context than appends at its end (collapse, clear, hide, retention, a fork's new thread)
recounts its tokens and may move the start anywhere, once.

The messages themselves are built by
render_format.py, which reads no database; it also drops what the loaded events still hold that
a provider refuses (render_format.valid_items, coherent).

A process keeps what its last render of a thread read (Kept): when only appends came since,
the next render reads just the new rows and plans again over the same rows a full read would
give, so it answers the same, byte for byte (docs/architecture.md, "Incremental renders").
"""

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import OuterRef, QuerySet, Subquery

from contextstore.db import PreparedGet, PreparedRows, read_together
from contextstore.expressions import block_text
from contextstore.models import ContextBlock, ContextBlockVersion, Event, Thread
from contextstore.render_format import (
    HistoryEvent,
    Item,
    Row,
    build_counted,
    coherent,
    effective_strip,
    event_class,
    event_cost,
    event_tokens,
    group_units,
    in_order,
    join_blocks,
    prefix_hash,
    valid_items,
    without_emptied,
)
from contextstore.selectors.peteos import peteos_window_view
from contextstore.selectors.threads import thread_blocks
from contextstore.tokens import (
    FRAME_TOKENS,
    canonical_json,
    count_tokens,
    framed,
    peteos_message,
    tool_tokens,
)

ON_OVERSIZE = ("skip", "stop")
# After this many turns in a row that do not fit, the rest of history is taken as not fitting:
# keeps the walk's cost following the budget rather than the length of history.
MAX_CONSECUTIVE_SKIPS = 8
# A turn already too big for the budget left is read on (to find its start, so older turns can
# come) for at most this many events; past them the rest of history is taken as not fitting.
MAX_SKIPPED_ROWS = 4096

# The reasons that make a render not fit: the rest say a provider would refuse the event.
FOR_SIZE = ("oversize", "budget", "stop", "window_start")
# Why an event was left out of a render (stats.skipped[].reason), in words for people.
SKIP_REASONS = {
    "oversize": "larger than the budget left; older events still came",
    "budget": "the budget was spent; this and older events were left out",
    "stop": "did not fit and on_oversize=stop: history ends here",
    "window_start": "before the render's start, which moves forward in chunks (start_chunk) so "
                    "the provider's prompt cache holds; this and older events were left out",
    "orphan_tool_result": "a tool result whose call is not in the context (providers reject it)",
    "no_turn_start": "before the first user message: a history a provider takes starts with one",
    "orphan_thinking": "thinking whose assistant message is not in the context (providers reject it)",
    "unanswered_tool_call": "a tool call whose results are not all in the context",
    "empty_after_strip": "nothing but thinking, which strip_thinking removes (peteos drops it too)",
    "outside_fork_range": "a peteos message whose _sequence_number is outside [0, _mutation_counter) "
                          "of its context: peteos' strip_thinking (a fork_insert_sequence) drops it",
}


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
_BLOCKS = PreparedGet(lambda thread_id: thread_blocks(thread=thread_id).annotate(
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


class Newest:
    """The thread's working context newest first, as (position, seq, tokens, thinking tokens,
    type, role, pk) rows: those already read (`rows`, from the newest on), then the older ones
    from the database, in pages each four times bigger, only while the walk asks for them.
    `used`: how many the walk took."""

    def __init__(self, thread_id: int, rows: list[tuple], complete: bool, page_size: int) -> None:
        self.thread_id, self.rows, self.complete, self.page_size = thread_id, rows, complete, page_size
        self.used = 0

    def __iter__(self) -> Iterator[tuple]:
        size = self.page_size
        while True:
            while self.used < len(self.rows):
                self.used += 1
                yield self.rows[self.used - 1]
            if self.complete:
                return
            size = min(size * 4, 4096)
            got = (_NEWEST_BEFORE.rows(self.thread_id, self.rows[-1][0], limit=size) if self.rows
                   else _NEWEST.rows(self.thread_id, limit=size))
            self.rows.extend(got)
            self.complete = len(got) < size


def window_floor(total: int, budget: int, chunk: float) -> int:
    """The stable start's floor (module doc): the smallest multiple of the chunk at or above
    `total` − `budget`, in tokens from the working context's oldest event."""
    step = max(int(budget * chunk), 1)
    return max(-(-(total - budget) // step) * step, 0)


def plan_history(*, budget: int, strip_thinking: bool, newest: Iterable[tuple],
                 on_oversize: str = "skip", start_chunk: float = 0.0, total: int = 0,
                 upto_seq: int | None = None) -> HistoryPlan:
    """Choose the turns that fit, newest first, reading only (position, seq, tokens, type, role):
    `newest`, the working context newest first (a Newest, which reads on only while asked).

    start_chunk > 0: the stable start (module doc), from `total`, the working context's stored
    tokens as of its event `upto_seq` (rows appended after it stand past the end: not counted).
    Every event costs its tokens framed (tokens.framed), as tokens.request_tokens counts it."""
    floor = window_floor(total, budget, start_chunk) if start_chunk > 0 else None
    raw: dict[int, int] = {}  # stored tokens of each row read, by id, for the turns' offsets

    def rows() -> Iterator[Row]:
        for position, seq, tokens, think, type_, role, pk in newest:
            kind, shown_as, opens = event_class(type_, role)
            raw[pk] = framed(tokens) if upto_seq is None or seq <= upto_seq else 0
            yield Row(position, seq, framed(event_cost(tokens, think, strip_thinking)), kind, shown_as,
                      pk, opens)

    plan = HistoryPlan()

    def leave(units: list[list[Row]], reason: str) -> None:
        # an event's own tokens, as every list of events says them (its cost less its framing)
        plan.left_out.extend({"seq": r.seq, "position": r.position, "tokens": r.cost - FRAME_TOKENS,
                              "reason": reason} for unit in units for r in reversed(unit))

    offset = total  # where the oldest row read starts, in stored tokens (stable starts)

    def units() -> Iterator[list[Row]]:
        nonlocal offset
        for unit in group_units(rows()):
            if unit[-1].kind != "result":
                yield unit
                continue
            # results with no call before them: no provider takes them; asides among them stay
            orphans = [r for r in unit if r.kind != "aside"]
            offset -= sum(raw[r.pk] for r in orphans)
            leave([orphans], "orphan_tool_result")
            yield from ([r] for r in unit if r.kind == "aside")

    used, skips_in_a_row = 0, 0
    turn: list[list[Row]] = []  # the turn being read, newest unit first
    cost = rows_read = 0
    end = total  # where the turn being read ends, in stored tokens
    past_floor = False  # the turn reaching back over the floor was read: the next is before the start
    for unit in units():
        if not turn:
            end = offset
        turn.append(unit)
        cost += unit[0].cost if len(unit) == 1 else sum(r.cost for r in unit)  # most are one row
        rows_read += len(unit)
        offset -= sum(raw[r.pk] for r in unit)
        over = used + cost > budget
        if over and (on_oversize == "stop" or used >= budget or rows_read > MAX_SKIPPED_ROWS):
            leave(turn, "stop" if on_oversize == "stop" else "budget")
            plan.stopped = True
            return plan
        if not unit[-1].opens:
            continue
        if floor is not None and offset < floor and (past_floor or end <= floor):
            # before the start: the turn reaching back over the floor was the last to consider
            leave(turn, "window_start")
            plan.stopped = True
            return plan
        past_floor = floor is not None and offset < floor
        if not over:
            plan.units.extend(turn)
            used += cost
            skips_in_a_row = 0
        elif skips_in_a_row >= MAX_CONSECUTIVE_SKIPS:
            leave(turn, "budget")
            plan.stopped = True
            return plan
        else:
            leave(turn, "oversize")
            skips_in_a_row += 1
        turn, cost, rows_read = [], 0, 0
    leave(turn, "no_turn_start")  # the oldest events, before any turn's start
    return plan


def walked_units(plan: HistoryPlan, events: Sequence[HistoryEvent]) -> list[list[Row]] | None:
    """The units the walk grouped, for render_format.valid_items to reuse instead of grouping
    the events again (as much work as the rest of it): when `events` (oldest first) are exactly
    the planned rows, checked by id, and nothing was left out between them. Grouping resumes
    fresh after every unit it closes, so the rows of a window without gaps group alone as they
    did in the walk; across a gap they might not (a unit left open by a turn's start that is a
    call). Otherwise None: the events are grouped again, and a stale grouping is never used."""
    ids = [r.pk for unit in plan.units for r in unit]
    if len(ids) != len(events) or any(e.pk != pk for e, pk in zip(reversed(events), ids, strict=True)):
        return None
    if ids:
        oldest, newest = plan.units[-1][-1].position, plan.units[0][0].position
        if any(oldest < x["position"] < newest for x in plan.left_out):
            return None
    return plan.units


def skipped_inside(plan: HistoryPlan) -> list[int]:
    """Positions of events left out inside the planned window: turns skipped for size, orphan
    results (those past its oldest end are outside it anyway)."""
    positions = [r.position for unit in plan.units for r in unit]
    if not positions:
        return []
    first, last = min(positions), max(positions)
    return [x["position"] for x in plan.left_out if first <= x["position"] <= last]


def load_planned(*, thread: Thread, plan: HistoryPlan, known: dict[int, HistoryEvent] | None = None,
                 read: tuple[tuple, list[tuple]] | None = None) -> list[HistoryEvent]:
    """The planned events, oldest first, in one query bounded by what was chosen; none at all
    when `known` (events read before, by id) holds them all.

    `read`: the rows window_statement's SQL gave, when the caller ran it itself (a recorded
    render's service runs it with its own writes: services/renders.py)."""
    planned = [r for unit in plan.units for r in unit]
    if not planned:
        return []
    if known is not None and all(r.pk in known for r in planned):
        return sorted((known[r.pk] for r in planned), key=lambda e: e.position)
    positions = [r.position for r in planned]
    # Bounded above too, so events appended meanwhile cannot push the window over budget.
    first, last = min(positions), max(positions)
    skipped = skipped_inside(plan)
    rows: Iterable[tuple[Any, ...]]
    if read is not None:
        rows = _WINDOW.answer(*read)
    elif skipped:
        rows = _window(thread.pk, first, last).exclude(position__in=skipped)
    else:
        rows = _WINDOW.rows(thread.pk, first, last)
    wanted = set(positions)
    return [HistoryEvent(*row) for row in rows if row[1] in wanted]


def window_statement(planned: "Planned") -> tuple[tuple, str, list] | None:
    """The one statement that reads a planned render's events, for a service to run with its
    own writes (db.run_along) and hand back to render_finish as `read`: (what the answer needs,
    SQL, params). None when the render reads no events, or not in one such statement (the same
    render as the last, every event known, or events skipped inside the window)."""
    plan = planned.plan
    rows = [r for unit in plan.units for r in unit]
    if planned.done is not None or not rows or skipped_inside(plan) or (
            planned.known is not None and all(r.pk in planned.known for r in rows)):
        return None
    positions = [r.position for r in rows]
    return _WINDOW.statement(planned.thread.pk, min(positions), max(positions))


def _window(thread_id: int, first: int, last: int) -> QuerySet:
    return Event.objects.filter(
        thread_id=thread_id, status=Event.Status.ACTIVE, visible=True, position__gte=first,
        position__lte=last,
    ).order_by("position").values_list(*HistoryEvent.__slots__)


_WINDOW = PreparedRows(_window)


# ------------------------------------------------------------------ blocks

@dataclass
class Section:
    name: str
    text: str
    tokens: int
    blocks: list[dict[str, Any]] = field(default_factory=list)
    shown: list[tuple[ContextBlock, str]] = field(default_factory=list)  # (block, its text)


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
    # each system block's and message's tokens (render_format.build_counted), and the tools'
    counts: dict[str, list[int]] = field(default_factory=dict)
    tools: list[Any] = field(default_factory=list)


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
    fixed: int  # tokens of tools, prefix, summary and suffix: what history's budget is left after
    plan: HistoryPlan
    # what the render read, to keep for the next one (see Kept)
    blocks: list[ContextBlock] = field(default_factory=list)
    newest: Newest | None = None
    known: dict[int, HistoryEvent] | None = None
    keep: bool = True  # keep what was read for the thread's next render
    done: "Rendered | None" = None  # the same render as the last: its answer (see Kept)
    tools: list[Any] = field(default_factory=list)  # the tool definitions the request sends


# ------------------------------------------------------------------ the incremental render

@dataclass(frozen=True)
class Kept:
    """What the last render of a thread in this process read, so that the next one reads only
    what was appended since. Agents render before every model call, and between two calls the
    working context usually only grows at its end.

    It holds while the thread's context_generation (moved by every change to the working
    context but new events at its end, and by block writes: services/history.py) and
    expired_seq (retention) are what they were. The next render then reads the visible active
    events with a seq above `seq`, up to the thread's last_seq, in one query: kept only if
    every one stands after the newest kept and the thread's working-context counters moved by
    exactly them, else the render reads everything as if nothing were kept. Planning runs
    again over the same rows a full read gives (plan_history is a function of them), so the
    answer is the same byte for byte; older rows than kept are read from the database as ever.
    """

    generation: int
    expired_seq: int
    seq: int  # the thread's last_seq the rows and counters are of
    active: tuple[int, int]  # the thread's (active_event_count, active_tokens) then
    blocks: list[ContextBlock]
    rows: list[tuple]  # the newest of the working context, newest first (Newest's rows)
    complete: bool  # rows reach the oldest event
    events: dict[int, HistoryEvent]  # the last render's events, by id
    tokens: int  # of those events: what the process-wide bound counts
    # The last render itself, when it showed the thread as of `seq`: (what it depends on
    # besides the history, see _answer_key; its plan; its answer), for the same render again.
    answer: tuple[tuple, Planned, Rendered] | None = None


# Threads kept per process (settings.CONTEXTSTORE["RENDER_KEEP_THREADS"]) and their events'
# tokens, at most: the least recently rendered go first.
KEPT_TOKENS = 4_000_000
_KEPT: OrderedDict[tuple, Kept] = OrderedDict()
_KEPT_LOCK = threading.Lock()


def _kept_key(thread: Thread) -> tuple:
    # created_at too: a database rolled back or restored may give a new thread an old id
    return connection.alias, thread.pk, thread.created_at


def _appended(thread_id: int, after: int, upto: int) -> QuerySet:
    """The rows appended in a seq range, by seq: the (thread, seq) key reads just them. In
    position order PostgreSQL, with statistics older than a bulk-loaded thread, walked the
    working context's index back over the whole thread (20 ms at 100,000 events); the caller
    puts them in position order."""
    return Event.objects.filter(
        thread_id=thread_id, status=Event.Status.ACTIVE, visible=True, seq__gt=after, seq__lte=upto,
    ).order_by("-seq").values_list(*HistoryEvent.__slots__)


_APPENDED = PreparedRows(_appended)


def _answer_key(thread: Thread, max_tokens: int, fmt: str, options: dict[str, Any]) -> tuple:
    """What a render's answer depends on besides the working context and the blocks: its
    options, and the thread's document (the summary, what expressions read: its revision),
    name and event count (expressions read them too)."""
    return (max_tokens, fmt, options["strip_thinking"], options["on_oversize"],
            options["start_chunk"], options.get("tools_hash"), thread.revision, thread.name,
            thread.event_count)


def _reuse(thread: Thread, page_size: int
           ) -> tuple[list[ContextBlock], Newest, dict[int, HistoryEvent]] | Kept | None:
    """The blocks, rows and events of the thread's kept render with what was appended since;
    the Kept itself when nothing was; None when nothing is kept or something other than
    appends happened since."""
    with _KEPT_LOCK:
        kept = _KEPT.get(_kept_key(thread))
        if kept is not None:
            _KEPT.move_to_end(_kept_key(thread))
    if (kept is None or kept.generation != thread.context_generation
            or kept.expired_seq != thread.expired_seq or kept.seq > thread.last_seq):
        return None
    if kept.seq == thread.last_seq and (thread.active_event_count, thread.active_tokens) == kept.active:
        return kept
    new = (sorted((HistoryEvent(*row) for row in _APPENDED.rows(thread.pk, kept.seq, thread.last_seq)),
                  key=lambda e: e.position, reverse=True)
           if kept.seq < thread.last_seq else [])
    if new and kept.rows and new[-1].position <= kept.rows[0][0]:
        return None  # not at the end: not an append
    moved = (kept.active[0] + len(new), kept.active[1] + sum(e.token_count for e in new))
    if moved != (thread.active_event_count, thread.active_tokens):
        return None  # the working context changed otherwise too
    rows = [(e.position, e.seq, e.token_count, e.thinking_tokens, e.type, e.role, e.pk) for e in new]
    return (kept.blocks, Newest(thread.pk, rows + kept.rows, kept.complete, page_size),
            {**kept.events, **{e.pk: e for e in new}})


def _keep(planned: Planned, events: list[HistoryEvent], rendered: Rendered) -> None:
    """Keep what this render read for the next render of its thread: the rows its walk took
    and the events it shows, as of the thread's last_seq when it was read (rows appended since
    are read again next time)."""
    thread, newest = planned.thread, planned.newest
    if newest is None or not planned.keep:
        return
    last = thread.last_seq
    rows = newest.rows[:newest.used]
    if rows and rows[0][1] > last:  # read after the thread was: appended since (at the front)
        rows = [r for r in rows if r[1] <= last]
    shown = {e.pk: e for e in events if e.seq <= last}
    # An answer that shows events appended after the thread was read is not the thread's as of
    # `last`: not kept (its rows and events are, as of `last`).
    key = _answer_key(thread, planned.max_tokens, planned.fmt, planned.options)
    answer = ((key, planned, rendered) if len(rows) == newest.used
              and len(shown) == len(events) else None)
    kept = Kept(thread.context_generation, thread.expired_seq, last,
                (thread.active_event_count, thread.active_tokens), planned.blocks, rows,
                newest.complete and newest.used == len(newest.rows), shown,
                sum(e.token_count for e in shown.values()), answer)
    at, most = _kept_key(thread), settings.CONTEXTSTORE["RENDER_KEEP_THREADS"]
    with _KEPT_LOCK:
        _KEPT.pop(at, None)
        _KEPT[at] = kept
        total = sum(k.tokens for k in _KEPT.values())
        while _KEPT and (len(_KEPT) > most or total > KEPT_TOKENS):
            _, gone = _KEPT.popitem(last=False)
            total -= gone.tokens


def forget_kept() -> None:
    """Drop every kept render of this process (tests compare with a render that reads all)."""
    with _KEPT_LOCK:
        _KEPT.clear()


def render_plan(
    *, thread: Thread, max_tokens: int, strip_thinking: bool = False, fmt: str = "raw",
    on_oversize: str = "skip", start_chunk: float | None = None, reuse: bool = True,
    tools: Sequence[Any] = (),
) -> Planned:
    """Plan a render of `thread`, read fresh by the caller (its counters say what to reuse).
    reuse=False reads everything and keeps nothing (the answer is the same). `tools`: the tool
    definitions the request will send: counted in the budget and the total (request_tokens)."""
    strip = effective_strip(fmt, strip_thinking)
    summary_tokens = count_tokens(thread.summary)
    page_size = first_page_size(thread, max(max_tokens - summary_tokens, 0))
    reused = _reuse(thread, page_size) if reuse else None
    if start_chunk is None:
        start_chunk = default_start_chunk()
    options: dict[str, Any] = {"strip_thinking": strip_thinking, "on_oversize": on_oversize,
                               "start_chunk": start_chunk}
    if tools:
        options["tools_hash"] = tools_hash(list(tools))
    if isinstance(reused, Kept):  # nothing new since the kept render
        if reused.answer is not None:
            key, before, rendered = reused.answer
            if _answer_key(thread, max_tokens, fmt, options) == key:
                return replace(before, thread=thread, keep=False, done=rendered)
        reused = (reused.blocks, Newest(thread.pk, list(reused.rows), reused.complete, page_size),
                  reused.events)
    if reused is not None:
        blocks, newest, known = reused
    else:
        # Each block with the id of its kept version, in the same query: a render record names
        # versions, and need not read the blocks again for them (services/renders.py). The
        # newest events come in the same round trip, sized before the blocks' tokens are known
        # (a few rows more than the walk needs when blocks take part of the budget).
        blocks, first = read_together((_BLOCKS, (thread.pk,), None), (_NEWEST, (thread.pk,), page_size))
        newest, known = Newest(thread.pk, first, len(first) < page_size, page_size), None
    prefix = block_section("prefix", [b for b in blocks if b.placement == "prefix"], thread)
    suffix = block_section("suffix", [b for b in blocks if b.placement == "suffix"], thread)
    fixed = (sum(tool_tokens(t) for t in tools) + section_tokens(prefix.tokens, prefix.text)
             + section_tokens(summary_tokens, thread.summary) + section_tokens(suffix.tokens, suffix.text))
    plan = plan_history(budget=max(max_tokens - fixed, 0), strip_thinking=strip, newest=newest,
                        on_oversize=on_oversize, start_chunk=start_chunk,
                        total=working_tokens(thread),
                        upto_seq=thread.last_seq)
    return Planned(thread, max_tokens, fmt, strip, options, prefix, suffix, summary_tokens, fixed,
                   plan, blocks, newest, known, keep=reuse, tools=list(tools))


def peteos_of(thread: Thread, units: list[list[Item]]) -> tuple[dict[int, int], set[int]] | None:
    """selectors.peteos.peteos_view of a thread whose render shows peteos messages, for the
    events it shows (peteos_window_view: read from them, not the whole thread), else None."""
    if not any(peteos_message(i.event.data) is not None for u in units for i in u):
        return None
    return peteos_window_view(thread, [i.event for u in units for i in u])


def outside_peteos_fork(view: tuple[dict[int, int], set[int]] | None, units: list[list[Item]],
                        strip_thinking: bool) -> tuple[list[list[Item]], list[dict[str, Any]]]:
    """`units` without the peteos messages that peteos' ``Context.strip_thinking`` does not copy
    into its fork (``fork_insert_sequence``: no ``_sequence_number``, or one outside
    ``[0, _mutation_counter)`` of the context the thread exports), and those as dropped."""
    if not strip_thinking or view is None or not view[1]:
        return units, []
    dropped_seqs = view[1]
    kept: list[list[Item]] = []
    dropped: list[dict[str, Any]] = []
    for unit in units:
        shown = [i for i in unit if i.event.seq not in dropped_seqs]
        dropped.extend({"seq": i.event.seq, "position": i.event.position, "tokens": i.event.token_count,
                        "reason": "outside_fork_range"} for i in unit if i.event.seq in dropped_seqs)
        if shown:
            kept.append(shown)
    return kept, dropped


def in_peteos_order(view: tuple[dict[int, int], set[int]] | None, units: list[list[Item]]
                    ) -> list[list[Item]]:
    """A peteos context's messages as peteos sends them: in its display order (the order of
    ``Context.messages``, which its chatbots' request bodies follow: a message appended at an
    earlier anchor stands before messages created after it). Other threads' units as they are."""
    if view is None:
        return units
    display = view[0]
    return in_order(units, lambda i: display.get(i.event.seq))


def working_tokens(thread: Thread) -> int:
    """The working context's tokens as a render counts them: every event's, framed (the stable
    start's floor is measured in them: window_floor)."""
    return thread.active_tokens + FRAME_TOKENS * thread.active_event_count


def section_tokens(tokens: int, text: str) -> int:
    """A system text's part of a request (tokens.request_tokens): framed, when it is shown."""
    return framed(tokens) if text else 0


def tools_hash(tools: list[Any]) -> str:
    """A tool list's name: the sha256 of its canonical JSON (as LLM-call events keep it)."""
    return hashlib.sha256(canonical_json(tools).encode()).hexdigest()


def default_start_chunk() -> float:
    """settings.CONTEXTSTORE["RENDER_START_CHUNK_PERCENT"] as a share of the budget."""
    return settings.CONTEXTSTORE["RENDER_START_CHUNK_PERCENT"] / 100


def render_stats(planned: Planned, *, used: int, included: int,
                 invalid: list[dict[str, Any]]) -> dict[str, Any]:
    """A render's stats: its plan, and the history it shows (`used` tokens in `included` events,
    `invalid` ones dropped as a provider would refuse them). The one place they are computed,
    for the render and for its record, which the record can take from the plan before the
    events are read (services/renders.py)."""
    thread, plan, prefix, suffix = planned.thread, planned.plan, planned.prefix, planned.suffix
    # tokens.request_tokens: the tools, each system text and each event shown, framed
    total = planned.fixed + used
    tools = sum(tool_tokens(t) for t in planned.tools)
    return {
        "max_tokens": planned.max_tokens,
        "total_tokens": total,
        # Honest: false when anything visible was left out for size, not only when over budget.
        "fits": total <= planned.max_tokens and not any(x["reason"] in FOR_SIZE for x in plan.left_out),
        "prefix_hash": prefix_hash(prefix.text),
        "on_oversize": planned.options["on_oversize"],
        "start_chunk": planned.options["start_chunk"],
        "strip_thinking": planned.strip,
        "skipped": sorted(plan.left_out + invalid, key=lambda x: -x["position"]),
        "sections": {
            "tools": {"tokens": tools, "count": len(planned.tools)},
            "prefix": {"tokens": section_tokens(prefix.tokens, prefix.text), "blocks": prefix.blocks},
            "summary": {"tokens": section_tokens(planned.summary_tokens, thread.summary)},
            "history": {
                "tokens": used,
                "events_included": included,
                "events_omitted": max(thread.active_event_count - included, 0),
                # the walk ended before the oldest event: older events are not listed one by one
                "older_not_examined": plan.stopped,
            },
            "suffix": {"tokens": section_tokens(suffix.tokens, suffix.text), "blocks": suffix.blocks},
        },
    }


def render_finish(planned: Planned, *, read: tuple[tuple, list[tuple]] | None = None) -> Rendered:
    """Load the planned events and build the messages (`read`: see load_planned)."""
    thread, strip = planned.thread, planned.strip
    if planned.done is not None:  # the same render as the last (render_plan)
        return planned.done
    events = load_planned(thread=thread, plan=planned.plan, known=planned.known, read=read)
    units, invalid = valid_items(events, walked_units(planned.plan, events))
    units, emptied = without_emptied(units, strip)
    view = peteos_of(thread, units)
    units, unforked = outside_peteos_fork(view, units, strip)
    emptied += unforked
    units, incoherent = coherent(events, units)
    units = in_peteos_order(view, units)
    invalid += emptied + incoherent
    stats = render_stats(planned, used=sum(framed(event_tokens(i.event, strip)) for unit in units
                                           for i in unit),
                         included=sum(len(u) for u in units), invalid=invalid)
    body, counts = build_counted(fmt=planned.fmt, prefix=planned.prefix.text, summary=thread.summary,
                                 suffix=planned.suffix.text, units=units, strip_thinking=strip,
                                 section_tokens=(planned.prefix.tokens, planned.summary_tokens,
                                                 planned.suffix.tokens))
    rendered = Rendered({"format": planned.fmt, **body, "stats": stats}, planned.prefix,
                        planned.suffix, thread.summary, units, planned.options, counts, planned.tools)
    _keep(planned, events, rendered)
    return rendered


def render(
    *, thread: Thread, max_tokens: int, strip_thinking: bool = False, fmt: str = "raw",
    on_oversize: str = "skip", start_chunk: float | None = None, reuse: bool = True,
    tools: Sequence[Any] = (),
) -> Rendered:
    return render_finish(render_plan(thread=thread, max_tokens=max_tokens,
                                     strip_thinking=strip_thinking, fmt=fmt, on_oversize=on_oversize,
                                     start_chunk=start_chunk, reuse=reuse, tools=tools))


def context_render(
    *, thread: Thread, max_tokens: int, strip_thinking: bool = False, fmt: str = "raw",
    on_oversize: str = "skip", start_chunk: float | None = None, tools: Sequence[Any] = (),
) -> dict[str, Any]:
    """Prefix blocks, the summary, the newest valid history units that fit, suffix blocks.

    Returns {"format", "messages", ("system" for anthropic), "stats"}; stats give tokens per
    section, events included and omitted, every event left out with its reason, and a hash of
    the prefix so an agent can see its prompt cache invalidated.
    """
    return render(thread=thread, max_tokens=max_tokens, strip_thinking=strip_thinking, fmt=fmt,
                  on_oversize=on_oversize, start_chunk=start_chunk, tools=tools).body
