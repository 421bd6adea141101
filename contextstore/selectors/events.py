"""Event reads: the filtered event query (text, regex, run, call, step, seq range, status),
its regex-guarded evaluation, and the seqs the thread page jumps to (a time, a run, an error)."""

import re
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Q, QuerySet, Subquery
from django.db.models.expressions import RawSQL

from contextstore.db import regex_guard, statements_share_a_message
from contextstore.errors import InvalidInput
from contextstore.fields import text_to_stored
from contextstore.models import Event, Thread

# Text search. On PostgreSQL the searchable text of each event (content, parts and data,
# upper-cased) sits in EventSearch under one trigram index, filled off the insert path by
# services/search.py from the queue a trigger fills (migrations/0001_initial.py); events still queued are
# read directly, so a search never misses a committed event. Both give candidates, each checked
# against the event itself (text_match or content alone), so the results are exactly those of
# the plain query. SQLite has no index: its searches are the plain query.
#
# A thread's search walks the thread's (thread, seq) index unless told otherwise: every row
# filtered by UPPER(col) LIKE, about 20 µs a row of 400 characters (1,000 events: 20 ms). The
# thread's own event_count says how big it is, so: on a thread of at least TEXT_INDEX_FIRST
# events, fetch the seqs of all candidates first, under a short timeout (a few ms, the queued
# events' share included); the page is read by those seqs. More than TEXT_INDEX_CAP candidates
# (a common word) or the timeout: the plain query, whose walk ends after one page of common
# matches.
TEXT_INDEX_FIRST = 100
TEXT_INDEX_CAP = 1_000
TEXT_INDEX_TIMEOUT_MS = 50
# The candidates: indexed texts that hold the term, and queued events whose text does (the
# same text, contextstore_search_text; `+ 0` keeps the (thread, seq) index out).
# The queued ones range by range on the primary key (OFFSET 0 keeps the planner from joining
# them otherwise: with no statistics on the queue it read the whole event table instead).
_CANDIDATES = (
    "SELECT event_id FROM contextstore_eventsearch WHERE ({indexed}){thread} UNION ALL "
    "SELECT q.id FROM contextstore_eventsearchpending p, LATERAL (SELECT e.id "
    "FROM {events} e WHERE e.id BETWEEN p.low AND p.high AND ({queued}){e_thread} "
    "OFFSET 0) AS q"
)
# A thread's search ends with the candidates' seqs, each read by its event's primary key, so
# the page is read by (thread, seq), the unique key: no plan has to guess how many events the
# thread holds. That guess went wrong on a partitioned table (EVENT_PARTITIONS), where a
# thread named plainly (to plan one partition) let the planner walk the thread instead: a
# thread newer than its partition's last ANALYZE is estimated at one row, so after a bulk load
# of 10,000 events the queued part walked the thread once per queued range (201 walks, 1.9 s,
# cut by the timeout, then the plain query: 130-170 ms a search) and the page walked it once
# (3 ms). So with partitions the thread's partition is looked up and read by its name, with
# `+ 0` as on one table, which never planned the walks.
_SEQS = ("SELECT s.seq FROM ({candidates} LIMIT %s) AS c(id), LATERAL (SELECT e.seq "
         "FROM {events} e WHERE e.id = c.id AND e.thread_id + 0 = %s OFFSET 0) AS s")
# The thread's partition, from its first event (by the (thread, seq) key: with the thread most
# of its partition, a plain LIMIT 1 was planned as a scan of the partition, 15-30 ms).
_PARTITION = ("SELECT tableoid::regclass::text FROM contextstore_event WHERE thread_id = %s "
              "ORDER BY seq LIMIT 1")
# One round trip: the timeout and the query go as one simple-protocol message (the client-side
# binding Django's psycopg backend uses by default), which PostgreSQL runs as one implicit
# transaction, so SET LOCAL ends with it. A BEGIN, SET LOCAL, query, COMMIT took four round
# trips, half the search's time on a busy machine. JIT off: the queued part's estimate (no
# statistics on the queue) passes jit_above_cost, and compiling took 40 ms of a 1 ms query.
_TIMEOUT = f"SET LOCAL statement_timeout = {TEXT_INDEX_TIMEOUT_MS}; SET LOCAL jit = off; "


def text_match(text: str) -> Q:
    """Events whose content, data or parts contain `text`, case-insensitively (data and parts
    are JSON text: a key or a value matches alike). Each arm is UPPER(col) LIKE UPPER(%s) on
    PostgreSQL; no index serves it: pair it with text_candidates or text_search."""
    return Q(content__icontains=text) | Q(data__icontains=text) | Q(parts__icontains=text)


def _candidates_sql(text: str, thread_id: int | None,
                    events: str = "contextstore_event") -> tuple[str, list[Any]]:
    """SQL (and its parameters) of the ids of the events that may hold `text`: a superset of
    text_match's (and of content's alone), on PostgreSQL. The term in both its forms: as agent
    text is stored (content: fields.text_to_stored) and as JSON text holds it (parts, data; a
    NUL there is written \\u0000, so a term with one cannot match JSON). `events`: the table
    the thread's queued events are read from (its partition, _PARTITION)."""
    forms = [f"%{connection.ops.prep_for_like_query(form)}%"
             for form in dict.fromkeys([text_to_stored(text), text]) if "\x00" not in form]
    like = " OR ".join(["{} LIKE UPPER(%s)"] * len(forms))
    sql = _CANDIDATES.format(
        indexed=like.format(*["text"] * len(forms)),
        queued=like.format(*["contextstore_search_text(e.content, e.parts, e.data)"] * len(forms)),
        events=events,
        thread="" if thread_id is None else " AND thread_id + 0 = %s",
        e_thread="" if thread_id is None else " AND e.thread_id + 0 = %s")
    thread = [] if thread_id is None else [thread_id]
    return sql, [*forms, *thread, *forms, *thread]


def text_candidates(thread: Thread, text: str) -> list[int] | None:
    """Seqs of the thread's events that may hold `text` (check each against the event), or
    None: ask the plain query (SQLite, server-side binding, a small thread, inside another
    transaction, a common word, the timeout)."""
    if (not statements_share_a_message() or thread.event_count < TEXT_INDEX_FIRST
            or not connection.get_autocommit()):  # in a transaction SET LOCAL would outlive this query
        return None
    try:
        with connection.cursor() as cursor:
            events = "contextstore_event"
            if settings.EVENT_PARTITIONS > 1:
                cursor.execute(_PARTITION, [thread.pk])
                events = (cursor.fetchone() or [events])[0]
            sql, params = _candidates_sql(text, thread.pk, events)
            cursor.execute(_TIMEOUT + _SEQS.format(candidates=sql, events=events),
                           [*params, TEXT_INDEX_CAP + 1, thread.pk])
            cursor.nextset()  # past the two SETs
            cursor.nextset()
            found = {seq for (seq,) in cursor.fetchall()}
    except DatabaseError:  # the timeout: a word too common for the index to pay
        return None
    return sorted(found) if len(found) <= TEXT_INDEX_CAP else None


def text_search(text: str) -> Q:
    """text_match, through the search index on PostgreSQL: for a search across threads, where
    the candidates drive the query (a semi-join on the event's primary key)."""
    if connection.vendor != "postgresql":
        return text_match(text)
    sql, params = _candidates_sql(text, None)
    return Q(pk__in=RawSQL(sql, params)) & text_match(text)


def thread_events(
    *, thread: Thread, types: Iterable[str] | None = None, text: str | None = None,
    regex: str | None = None, run_id: str | None = None, call_id: str | None = None,
    step: str | None = None, after_seq: int | None = None, before_seq: int | None = None,
    status: str | None = "active", visible: bool | None = None, limit: int | None = None,
    current_call: bool = False,
) -> QuerySet[Event]:
    """Events of a thread matching all the given filters, oldest first.

    `limit` keeps the most recent matches (Nooa's events.query); `status` is one status,
    "all", or None for all; `current_call` narrows to the call id of the newest event that has one.
    """
    found = text_candidates(thread, text) if text else None
    if found is not None:  # all the thread's candidates, by seq: no plan can walk the thread now
        qs = Event.objects.filter(thread=thread, seq__in=found).select_related("run")
    else:
        qs = Event.objects.filter(thread=thread).select_related("run")
    if text:
        qs = qs.filter(content__icontains=text)
    if status and status != "all":
        qs = qs.filter(status=status)
    if types:
        qs = qs.filter(type__in=list(types))
    if regex:
        qs = qs.filter(content__iregex=regex)
    if run_id:
        qs = qs.filter(run__run_id=run_id)
    if current_call:
        newest = (
            Event.objects.filter(thread=thread).exclude(call_id="").order_by("-seq")
            .values_list("call_id", flat=True).first()
        )
        qs = qs.filter(call_id=newest) if newest else qs.none()
    if call_id:
        qs = qs.filter(call_id=call_id)
    if step:
        qs = qs.filter(step=step)
    if after_seq is not None:
        qs = qs.filter(seq__gt=after_seq)
    if before_seq is not None:
        qs = qs.filter(seq__lt=before_seq)
    if visible is not None:
        qs = qs.filter(visible=visible)
    if limit is not None:
        newest_pks = qs.order_by("-seq").values("pk")[:limit]
        qs = Event.objects.filter(pk__in=Subquery(newest_pks)).select_related("run")
    return qs.order_by("seq")


def event_search(*, thread: Thread, first: int | None = None, **filters: Any) -> list[Event]:
    """Nooa's events.query over the database: AND of filters, chronological, limit keeps newest.

    `first` reads only the first n matches (one page of a keyset-paginated listing).

    Evaluates the query (inside a statement timeout when a regex is given) and turns a bad
    pattern or a timeout into a clear input error.
    """
    regex = filters.get("regex")
    if regex:
        try:
            re.compile(regex)
        except re.error as exc:
            raise InvalidInput(f"Invalid regular expression: {exc}", details={"regex": str(exc)}) from exc
    qs = thread_events(thread=thread, **filters)
    if first is not None:
        qs = qs[:first]
    if not regex:
        return list(qs)
    try:
        with regex_guard():
            return list(qs)
    except DatabaseError as exc:
        message = str(exc).lower()
        timed_out = isinstance(exc.__cause__, TimeoutError) or "user-defined function raised" in message
        if timed_out or "statement timeout" in message or "canceling statement" in message:
            raise InvalidInput("The regular expression took too long; narrow it down.",
                               code="regex_timeout", details={"regex": regex}) from exc
        raise InvalidInput(f"The database refused the regular expression: {exc}",
                           details={"regex": regex}) from exc


def event_seq_at(*, thread: Thread, when: Any) -> int | None:
    """The first event at or after `when`, found by binary search over seq (about 17 point
    reads for 100k events, no index on time needed). Events are appended in time order; an
    agent that back-dates `occurred_at` lands the search near, not exactly on, its time."""
    lo, hi, found = 1, thread.last_seq, None
    while lo <= hi:
        mid = (lo + hi) // 2
        row = (Event.objects.filter(thread=thread, seq__gte=mid).order_by("seq")
               .values_list("seq", "occurred_at").first())
        if row is None:
            hi = mid - 1
        elif row[1] >= when:
            found, hi = row[0], mid - 1
        else:
            lo = row[0] + 1
    return found


def run_first_seq(*, thread: Thread, run_id: str) -> int | None:
    return (Event.objects.filter(thread=thread, run__run_id=run_id).order_by("seq")
            .values_list("seq", flat=True).first())


def error_seq(*, thread: Thread, after: int | None = None, before: int | None = None) -> int | None:
    """The next error (an Error event or a failed tool result: Event.is_error) after seq
    `after`, or the previous one before seq `before`."""
    qs = Event.objects.filter(thread=thread, is_error=True, status=Event.Status.ACTIVE)
    if after is not None:
        return qs.filter(seq__gt=after).order_by("seq").values_list("seq", flat=True).first()
    return qs.filter(seq__lt=before).order_by("-seq").values_list("seq", flat=True).first()
