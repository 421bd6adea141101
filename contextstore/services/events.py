"""Appending events to a thread: a batch validated (eventspec), made idempotent per client_id,
and stored through history's one door (history.events_add), which owns seq and the counters."""

import copy
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from contextstore.db import insert_sql
from contextstore.errors import Conflict
from contextstore.eventspec import EventSpec, event_specs, same_payload
from contextstore.models import AuditLog, Event, Thread
from contextstore.redaction import redact_events, use_workspace
from contextstore.services import history
from contextstore.services.common import Actor, audit, audit_row, lock_thread
from contextstore.services.renders import llm_call_prepare, texts_keep
from contextstore.services.summaries import summarization_check


@dataclass
class AppendResult:
    events: list[Event]
    created: int
    last_seq: int = 0  # the thread's newest seq after the append


def event_append(*, thread: Thread, events: list[Any], actor: Actor) -> AppendResult:
    """Append a batch of events to a thread.

    Idempotent per client_id: the same client_id with the same payload returns the stored event;
    with a different payload the whole batch is refused with a conflict. Sequence numbers are
    gap-free under concurrent writers (the thread row is locked), and counters are updated in
    the same transaction. The cost depends on the batch, not on the thread's history.
    Secrets in the events' text are redacted before anything else (contextstore/redaction.py).
    """
    events = redact_events(use_workspace(thread.workspace), events)
    return event_append_specs(thread=thread, specs=event_specs(events), actor=actor)


def event_append_specs(*, thread: Thread, specs: list[EventSpec], actor: Actor,
                       locked: bool = False, activity_occurred: bool = False,
                       path: str = "auto", audit_details: dict[str, Any] | None = None) -> AppendResult:
    """event_append of a batch its caller validated already (eventspec.event_specs), as a
    commit does before it takes any lock; the caller redacted it (redaction.redact_events).
    `locked`: the caller holds the thread's row lock and `thread` is the row it read under it
    (history_only), so it is not read again. `activity_occurred`: the session's last activity
    is the newest event's occurred_at (history.events_add). `audit_details`: more details for
    the events.append audit row (a commit names its blobs there).

    `path` (with `locked`), when the caller's transaction is the unit of work (a commit): no
    savepoint is taken. "fast": PostgreSQL's folded insert; a batch that needs the stored
    client_ids read (one named twice, or one stored already) raises history.Skipped, and the
    caller rolls its transaction back and reruns "checked" (so nothing is half-written and the
    outcome is the checked path's). "checked": stored client_ids read first. "auto" (any other
    caller): the folded insert in a savepoint, the checked path after a skip."""
    specs, call_texts = llm_call_prepare(thread=thread, specs=specs)  # render_id, data.messages
    now = timezone.now()
    details = audit_details or {}

    outcome = None
    if connection.vendor == "postgresql" and path != "checked":
        try:
            outcome = _append_folded(thread, specs, call_texts, actor, now, locked, activity_occurred,
                                     details, savepoint=path == "auto")
        except history.Skipped:
            if path == "fast":
                raise
            outcome = None  # rolled back; the path below reads the stored events
        if outcome is None and path == "fast":
            raise history.Skipped  # a client_id named twice: nothing written yet
    if outcome is None:
        outcome = _append_checked(thread, specs, call_texts, actor, now, locked, activity_occurred,
                                  details, savepoint=path == "auto")
    thread, final, created = outcome
    if created:
        summarization_check(thread=thread)
    return AppendResult(events=final, created=created, last_seq=thread.last_seq)


def _append_folded(
    thread: Thread, specs: list[EventSpec], call_texts: list[str], actor: Actor, now: datetime,
    locked: bool = False, activity_occurred: bool = False, details: dict[str, Any] | None = None,
    savepoint: bool = True,
) -> tuple[Thread, list[Event], int] | None:
    """The common append on PostgreSQL, any batch size, in four round trips: BEGIN, the
    thread's row lock, one statement (the rows, the thread's and session's counters, the audit
    row naming the range) and COMMIT. A client_id already stored is not looked up first: the
    insert skips it (ON CONFLICT DO NOTHING), and then the whole transaction is rolled back
    (history.Skipped). For 100 events this is faster than the checked path's lookup, ids and
    COPY. None when the batch names a client_id twice: the checked path reads them."""
    client_ids = [s.client_id for s in specs if s.client_id]
    if len(set(client_ids)) != len(client_ids):
        return None
    with transaction.atomic(savepoint=savepoint):
        # A copy when the caller locked it: the rolled-back skip must not leave counters moved.
        locked_row = copy.copy(thread) if locked else lock_thread(thread, history_only=True)
        texts_keep(workspace_id=thread.workspace_id, texts=call_texts)

        def audited(objs: list[Event]) -> list[tuple[str, tuple]]:  # the audit row naming the range
            return [insert_sql(AuditLog, [audit_row(
                actor=actor, action="events.append", target=locked_row,
                workspace=locked_row.workspace, count=len(objs), first_seq=objs[0].seq,
                last_seq=objs[-1].seq, **(details or {}))])]

        objs = history.events_add(thread=locked_row, specs=specs, now=now, fold_with=audited,
                                  activity_occurred=activity_occurred)
    return locked_row, objs, len(objs)


def _append_checked(
    thread: Thread, specs: list[EventSpec], call_texts: list[str], actor: Actor, now: datetime,
    locked: bool = False, activity_occurred: bool = False, details: dict[str, Any] | None = None,
    savepoint: bool = True,
) -> tuple[Thread, list[Event], int]:
    """Any append (SQLite's, and a replay on PostgreSQL): stored client_ids are read first
    (replays, conflicts); big batches COPY."""
    with transaction.atomic(savepoint=savepoint):
        thread = thread if locked else lock_thread(thread, history_only=True)
        texts_keep(workspace_id=thread.workspace_id, texts=call_texts)
        client_ids = {s.client_id for s in specs if s.client_id}
        stored = (
            {e.client_id: e for e in Event.objects.filter(thread=thread, client_id__in=client_ids)}
            if client_ids else {}
        )
        results: list[Event | None] = [None] * len(specs)
        fresh: list[int] = []  # indexes of the specs to store
        batch_hashes: dict[str, str] = {}
        for i, spec in enumerate(specs):
            if spec.client_id is None:
                fresh.append(i)
                continue
            known = stored.get(spec.client_id)
            expected = known.payload_hash if known else batch_hashes.get(spec.client_id)
            if expected is not None and not same_payload(expected, spec.payload_hash):
                raise Conflict(
                    f"client_id {spec.client_id!r} was already used for a different event.",
                    code="idempotency_conflict",
                    details={f"events[{i}].client_id": spec.client_id},
                )
            if known is not None:
                results[i] = known
            elif spec.client_id not in batch_hashes:
                batch_hashes[spec.client_id] = spec.payload_hash
                fresh.append(i)

        created = history.events_add(thread=thread, specs=[specs[i] for i in fresh], now=now,
                                     activity_occurred=activity_occurred)
        for i, obj in zip(fresh, created, strict=True):
            results[i] = obj
        if created:
            audit(actor=actor, action="events.append", target=thread, workspace=thread.workspace,
                  count=len(created), first_seq=created[0].seq, last_seq=created[-1].seq,
                  **(details or {}))

    by_client: dict[str | None, Event] = {e.client_id: e for e in results if e is not None and e.client_id}
    final = [e if e is not None else by_client[specs[i].client_id] for i, e in enumerate(results)]
    return thread, final, len(created)
