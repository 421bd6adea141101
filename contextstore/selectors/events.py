"""Event reads: the filtered event query (text, regex, run, call, step, seq range, status),
its regex-guarded evaluation, and the seqs the thread page jumps to (a time, a run, an error)."""

import re
from collections.abc import Iterable
from typing import Any

from django.db import DatabaseError, connection
from django.db.models import Q, QuerySet, Subquery

from contextstore.db import regex_guard, statements_share_a_message
from contextstore.errors import InvalidInput
from contextstore.fields import text_to_stored
from contextstore.models import Event, Thread

# Text search on a big thread asks the trigram index (event_content_trgm) first. Left to itself,
# the planner walks the thread's (thread, seq) index whenever its statistics predate the thread's
# rows (autovacuum off, a bulk load not yet analyzed): 100k rows filtered one by one for a rare
# word. The thread's own event_count says how big it is, so: on a thread of at least
# TEXT_INDEX_FIRST events, fetch the ids of all its matches through the index (the `+ 0` keeps
# the (thread, seq) index out of that query), under a short timeout; a rare word answers in
# milliseconds and the page is read by those ids. More than TEXT_INDEX_CAP matches (a common
# word) or the timeout: the ordinary query, whose walk ends after one page of common matches.
# Both read committed rows only (the GIN index, pending list included, is always current), so
# no committed event is ever missed.
TEXT_INDEX_FIRST = 10_000
TEXT_INDEX_CAP = 1_000
TEXT_INDEX_TIMEOUT_MS = 50
# One round trip: the timeout and the query go as one simple-protocol message (the client-side
# binding Django's psycopg backend uses by default), which PostgreSQL runs as one implicit
# transaction, so SET LOCAL ends with it. A BEGIN, SET LOCAL, query, COMMIT took four round
# trips, half the search's time on a busy machine. Like Django's icontains (same index).
_TEXT_MATCHES_SQL = (
    f"SET LOCAL statement_timeout = {TEXT_INDEX_TIMEOUT_MS}; "
    'SELECT "id" FROM "contextstore_event" '
    'WHERE UPPER("content") LIKE UPPER(%s) AND "thread_id" + 0 = %s LIMIT %s'
)


def text_match(text: str) -> Q:
    """Events whose content, data or parts contain `text`, case-insensitively (data and parts
    are JSON text: a key or a value matches alike). On PostgreSQL each arm is UPPER(col) LIKE
    UPPER(%s), which the trigram indexes event_content_trgm, event_data_trgm and
    event_parts_trgm answer, combined in one BitmapOr."""
    return Q(content__icontains=text) | Q(data__icontains=text) | Q(parts__icontains=text)


def _text_matches(thread: Thread, text: str) -> list[int] | None:
    """Ids of all the thread's events whose content contains `text`, or None: ask the ordinary
    query (SQLite, server-side binding, a small thread, inside another transaction, a common
    word)."""
    if (not statements_share_a_message() or thread.event_count < TEXT_INDEX_FIRST
            or not connection.get_autocommit()):  # in a transaction SET LOCAL would outlive this query
        return None
    pattern = f"%{connection.ops.prep_for_like_query(text_to_stored(text))}%"
    try:
        with connection.cursor() as cursor:
            cursor.execute(_TEXT_MATCHES_SQL, [pattern, thread.pk, TEXT_INDEX_CAP + 1])
            cursor.nextset()  # past the SET
            found = [pk for (pk,) in cursor.fetchall()]
    except DatabaseError:  # the timeout: a word too common for the index to pay
        return None
    return found if len(found) <= TEXT_INDEX_CAP else None


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
    found = _text_matches(thread, text) if text else None
    if found is not None:  # all the thread's matches, by id: no plan can walk the thread now
        qs = Event.objects.filter(pk__in=found).select_related("run")
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
