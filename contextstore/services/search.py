"""The search index's worker (PostgreSQL): indexes the events contextstore_eventsearchpending
names (a trigger fills it as events are inserted or their text changes; migrations/0001_initial.py).

Each batch is one short transaction: it takes the oldest queued rows (SKIP LOCKED, so workers
can run side by side), writes the text of at most SEARCH_INDEX_BATCH event ids into
EventSearch and removes what it did from the queue. A search never waits for this: it reads
queued events directly (selectors/search.py), so the worker's delay costs speed, not results.
"""

import time

from django.conf import settings
from django.db import connection, transaction

from contextstore.models import EventSearchPending

QUEUE_ROWS = 1000  # queue rows one batch looks at (a single append queues one row)

# Ranges merged so no event comes twice (ON CONFLICT cannot touch a row twice in a statement);
# a range may hold another transaction's ids, which its own queue row brings in.
_INDEX_SQL = (
    "INSERT INTO contextstore_eventsearch (event_id, thread_id, text) "
    "SELECT e.id, e.thread_id, contextstore_search_text(e.content, e.parts, e.data) "
    "FROM unnest(%s::bigint[], %s::bigint[]) AS r (low, high) "
    "JOIN contextstore_event e ON e.id BETWEEN r.low AND r.high "
    "ON CONFLICT (event_id) DO UPDATE SET text = EXCLUDED.text"
)


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def _index_batch(batch: int) -> int | None:
    """One batch, in the caller's transaction: the number of event ids it covered, or None
    when nothing is queued."""
    queued = list(EventSearchPending.objects.select_for_update(skip_locked=True)
                  .order_by("pk").values_list("pk", "low", "high")[:QUEUE_ROWS])
    if not queued:
        return None
    taken, done, budget = [], [], batch
    for pk, low, high in queued:
        if high - low + 1 > budget:  # the rest of a big insert waits for the next batch
            taken.append((low, low + budget - 1))
            EventSearchPending.objects.filter(pk=pk).update(low=low + budget)
            budget = 0
            break
        taken.append((low, high))
        done.append(pk)
        budget -= high - low + 1
        if not budget:
            break
    ranges = _merged(taken)
    with connection.cursor() as cursor:
        cursor.execute(_INDEX_SQL, [[low for low, _ in ranges], [high for _, high in ranges]])
    EventSearchPending.objects.filter(pk__in=done).delete()
    return batch - budget


def search_index_pending(*, seconds: float | None = None) -> dict[str, int]:
    """Index what is queued, batch after batch, until the queue is empty or `seconds` have
    passed (the next run goes on). PostgreSQL only: SQLite searches the events themselves."""
    if connection.vendor != "postgresql":
        return {"batches": 0, "ids": 0}
    batch = int(settings.CONTEXTSTORE["SEARCH_INDEX_BATCH"])
    deadline = None if seconds is None else time.monotonic() + seconds
    batches = ids = 0
    while deadline is None or time.monotonic() < deadline:
        with transaction.atomic():
            covered = _index_batch(batch)
        if covered is None:
            break
        batches, ids = batches + 1, ids + covered
    return {"batches": batches, "ids": ids}
