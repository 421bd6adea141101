"""One door for a framework save: `thread_commit`.

Every framework's save is a commit of one thread, whatever its protocol: the sync protocol's
(services/sync.py: keyed items and the framework's namespace of the document, what the
LangGraph, ADK, Agent Framework and peteos adapters send) and a framework session's
(services/agent_sessions.py: appended events, merge patches of the states, blobs, what the
session adapters send). In one transaction, under the thread's row lock:

1. the replay store (CommitRecord) is read: a save whose batch id has an answer gets that answer
   back when it is the same request (its hash), a 409 when it is another;
2. the one stale check (document.check_expected): the revision and the last seq the writer read;
3. the protocol's `write`, which resolves what the save changes and hands it to the one
   writer of a save, `commit_write`: its transcript (events appended by client id, or keyed
   items rewritten in place and retired) and its document (values set, merge patches), one
   revision for the document, the counters through history, the audit rows;
4. the answer is stored under the batch id, with the request's hash.

The fast path, tried first: the thread's locked read brings the batch's record in the same
statement (`replay_annotations`) and the record is inserted with the save's last statements
(ON CONFLICT DO NOTHING, on PostgreSQL folded into one statement: one round trip). Where only a
look would tell what to do, history.Skipped is raised before anything is kept: a first save of
the same batch that ended while this one waited for the lock (the record not inserted, or the
base stale), or a client_id stored already or named twice (the append's). The transaction rolls
back and the checked path runs, which reads the record once the lock is held.

A save sent in several parts stages its earlier parts in the same store (`stage`: the record
has parts and no answer yet); the last part's write takes them (`staged_take`). Records expire
after COMMIT_REPLAY_HOURS (`commit_records_prune`, run by beat), staged parts with them.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from contextstore import documents
from contextstore.db import PreparedGet, bytes_bound, insert_sql, one_statement
from contextstore.errors import Conflict
from contextstore.eventspec import EventSpec
from contextstore.models import CommitRecord, Event, Session, Thread
from contextstore.services import events as event_service
from contextstore.services import history
from contextstore.services.common import Actor, audit, lock_thread
from contextstore.services.document import check_expected, document_write, is_stale

Statement = tuple[str, tuple]


@dataclass
class Expected:
    """What a conditional save read: the thread's revision and its history's last seq (None:
    not checked). `name`: what the protocol calls the revision (sync's base_revision)."""

    revision: int | None = None
    last_seq: int | None = None
    name: str = "expected_revision"


@dataclass
class Committed:
    response: dict[str, Any]
    replayed: bool  # the stored answer of an earlier delivery of the same save


# The thread's locked read of a save (with its batch's record, the fast path's), and the
# record alone (the checked path's), compiled once per process (db.PreparedGet).
def replay_annotations(batch_id: str) -> dict[str, Subquery]:
    """The batch's record, as annotations of a locked read of its thread (record_hash,
    record_response): one round trip, not two."""
    def column(name: str) -> Subquery:
        return Subquery(CommitRecord.objects.filter(thread_id=OuterRef("pk"), batch_id=batch_id)
                        .values(name)[:1])
    return {"record_hash": column("request_hash"), "record_response": column("response")}


_LOCKED_WITH_RECORD = PreparedGet(lambda pk, workspace_id, batch_id: (
    Thread.objects.select_for_update(of=("self",), no_key=True).select_related("workspace")
    .filter(pk=pk, workspace_id=workspace_id).annotate(**replay_annotations(batch_id))), text=(2,))
_RECORD = PreparedGet(lambda thread_id, batch_id: CommitRecord.objects.filter(
    thread_id=thread_id, batch_id=batch_id).only("request_hash", "response"), text=(1,))


def lock_with_record(thread: Thread, batch_id: str) -> Thread:
    """The thread re-read under its row lock (as common.lock_thread), with its batch's record."""
    locked = _LOCKED_WITH_RECORD.get(thread.pk, thread.workspace_id, batch_id)
    if locked is None:
        raise Thread.DoesNotExist("Thread matching query does not exist.")
    return locked


# lock(path) -> (the thread under its row lock, whether that read brought the batch's record)
Lock = Callable[[str], tuple[Thread, bool]]
# write(thread, path) -> (the answer, statements to run last, with the record's insert)
Write = Callable[[Thread, str], tuple[dict[str, Any], list[Statement]]]


def thread_commit(*, lock: Lock, write: Write, batch_id: str = "", request_hash: str = "",
                  expected: Expected | None = None, batch_name: str = "batch_id") -> Committed:
    """A framework save: replayed by batch id, refused when stale, else written and its answer
    kept (see the module's docstring). `lock` and `write` are the protocol's; each runs once
    per path ("fast", then "checked" if the fast one gave up), inside the transaction.
    `batch_name`: what the protocol calls the batch id (sync's upload_id), in a 409."""
    expected = expected or Expected()
    try:
        return _commit(lock, write, batch_id, request_hash, expected, batch_name, path="fast")
    except history.Skipped:  # rolled back, nothing written: the checked path finds out why
        return _commit(lock, write, batch_id, request_hash, expected, batch_name, path="checked")


def _commit(lock: Lock, write: Write, batch_id: str, request_hash: str, expected: Expected,
            batch_name: str, *, path: str) -> Committed:
    """One path's transaction, the unit of work: no savepoints inside, any error rolls all of
    it back."""
    with transaction.atomic():
        thread, read_record = lock(path)
        answer: Any = None
        if read_record:
            answer, stored_hash = thread.record_response, thread.record_hash  # type: ignore[attr-defined]
        elif batch_id:
            # Read once the lock is held: a locked read's subqueries see the database as it was
            # before that read waited for the lock, not a first save that ended meanwhile.
            found = _RECORD.get(thread.pk, batch_id)
            if found is not None:
                answer, stored_hash = found.response, found.request_hash
        if answer is not None:  # applied before (a record without an answer is only staged)
            if not stored_hash or stored_hash != request_hash[:len(stored_hash)]:
                raise Conflict(f"{batch_name} was already used for a different save.",
                               code="idempotency_conflict", details={batch_name: batch_id})
            return Committed(unpacked(thread, answer), replayed=True)
        if batch_id and read_record and is_stale(thread, expected.revision, expected.last_seq):
            raise history.Skipped  # a first save of this batch may have ended meanwhile: look
        check_expected(thread, expected.revision, expected.last_seq, name=expected.name)
        response, writes = write(thread, path)
        if batch_id:
            # Not looked up first: the locked read found none, and a first save of this batch
            # that ended while that read waited for the lock is found here (no row inserted).
            writes.append(insert_sql(CommitRecord, [CommitRecord(
                thread=thread, batch_id=batch_id, request_hash=request_hash[:HASH_KEPT],
                response=packed(thread, response))],
                returning=("id",), ignore_conflicts=True))
        if not run_statements(writes) and batch_id:
            raise history.Skipped  # rolled back; the checked path replays the first save
    return Committed(response, replayed=False)


# --- the record, kept small ----------------------------------------------------------------
# A record is kept for every save within the replay window, so its bytes count per save: a
# framework appending one event per save (ADK) kept a record larger than the event. What the
# thread's rows already hold is not kept twice; a replay reads it back (`unpacked`).

HASH_KEPT = 32  # hex digits of the request's SHA-256 kept: 128 bits tell two saves apart
EVENTS_KEPT_AS_RANGE = "events@"  # [first seq, count]: the answer's events are those rows


def packed(thread: Thread, response: dict[str, Any]) -> dict[str, Any]:
    """The answer as the record keeps it: without the thread's and its session's ids, and an
    answer's `events` (id, seq, client_id, occurred_at of each) as the range of seqs they are,
    when their seqs follow one another (a fresh append: a thread's seq names one row) and their
    times read back as they were given (in UTC). Anything else is kept as it is."""
    kept = dict(response)
    if kept.get("thread") == thread.pk and kept.get("session") == thread.session_id:
        del kept["thread"], kept["session"]
    events = kept.get("events")
    if isinstance(events, list) and events and all(
            isinstance(e, dict) and list(e) == ["id", "seq", "client_id", "occurred_at"]
            and e["seq"] == events[0]["seq"] + i
            and e["occurred_at"] == _utc(e["occurred_at"]) for i, e in enumerate(events)):
        kept = {(EVENTS_KEPT_AS_RANGE if name == "events" else name):
                ([events[0]["seq"], len(events)] if name == "events" else value)
                for name, value in kept.items()}
    return kept


def unpacked(thread: Thread, kept: dict[str, Any]) -> dict[str, Any]:
    """The answer a record keeps (`packed`), whole again, in the order it was given."""
    if "thread" in kept or EVENTS_KEPT_AS_RANGE not in kept and "events" not in kept:
        return kept  # kept whole (a sync's answer, or a record from before packing)
    answer: dict[str, Any] = {"session": thread.session_id, "thread": thread.pk}
    for name, value in kept.items():
        if name == EVENTS_KEPT_AS_RANGE:
            first, count = value
            answer["events"] = [
                {"id": pk, "seq": seq, "client_id": client_id, "occurred_at": at.isoformat()}
                for pk, seq, client_id, at in Event.objects.filter(
                    thread_id=thread.pk, seq__gte=first, seq__lt=first + count)
                .order_by("seq").values_list("id", "seq", "client_id", "occurred_at")]
        else:
            answer[name] = value
    return answer


def _utc(text: Any) -> str | None:
    """An ISO date-time as the database gives it back (UTC), None when it is not one."""
    try:
        return datetime.fromisoformat(text).astimezone(UTC).isoformat()
    except (TypeError, ValueError):
        return None


# Bytes (blobs) from this size on go apart from the SQL, in binary: bound into its text they
# are escaped as hex, twice their size, and PostgreSQL lexes them back (of a 1 MB blob's commit,
# 22 ms of 37 in process); below it the text form is converted once per process (db.insert_sql).
BINARY_FROM_BYTES = 16 * 1024


def run_statements(writes: list[Statement]) -> list[tuple]:
    """Run these statements in order: on PostgreSQL in one (the last, an INSERT … RETURNING,
    with the others as data-modifying CTEs: one round trip), its values in binary when they
    carry BINARY_FROM_BYTES of bytes or more. Returns the last one's rows."""
    if connection.vendor == "postgresql" and len(writes) > 1 and " RETURNING " in writes[-1][0]:
        return one_statement(writes[-1], *writes[:-1], binary=bytes_bound(writes) >= BINARY_FROM_BYTES)
    rows: list[tuple] = []
    with connection.cursor() as cursor:
        for text, params in writes:
            cursor.execute(text, params)
            rows = cursor.fetchall() if " RETURNING " in text else []
    return rows


# --- the one writer of a save -------------------------------------------------------------

@dataclass
class Keyed:
    """A keyed save's transcript (sync's items), as its protocol resolved it against the stored
    versions: `fresh` rows to add with their `places`; `rewrites`, (index into fresh, the old
    version it replaces in place); `retire`, events leaving; `adopt`, (stored event, item key,
    digest) of events that become an item's current version as they are."""

    fresh: list[EventSpec] = field(default_factory=list)
    places: list[history.Place] = field(default_factory=list)
    rewrites: list[tuple[int, Event]] = field(default_factory=list)
    retire: list[Event] = field(default_factory=list)
    adopt: list[tuple[Event, str, str]] = field(default_factory=list)


@dataclass
class Written:
    events: list[Event]  # the rows of the save: appended (or found by client id), or keyed fresh
    created: int  # rows newly stored
    revision: int
    last_seq: int
    fields: list[str]  # the document fields that changed


def commit_write(
    *, thread: Thread, actor: Actor, reason: str, path: str = "auto",
    events: list[EventSpec] | None = None, keyed: Keyed | None = None,
    values: dict[str, Any] | None = None, state: dict[str, Any] | None = None,
    audit_action: str = "", audit_details: dict[str, Any] | None = None,
) -> Written:
    """The transcript and the document of one save, in thread_commit's transaction with the
    thread locked (no savepoints inside). Every framework save writes here, whatever its
    protocol.

    Transcript: `events`, appended idempotently by client id (events.event_append_specs; the
    session's last activity follows their occurred_at; path "fast" raises history.Skipped
    where it would have to look), and/or `keyed`, a sync's rewrites in place and retirements.
    Document: `values` set (only those that differ from the stored ones, as text), `state` a
    merge patch of the state; one revision for both (document.document_write). A save of the
    transcript alone keeps the revision, as an append does.

    Audit: `audit_action` names one row for the whole save, written when anything changed
    (a sync's thread.sync); without it the append's events.append row (with `audit_details`)
    and a state.patch row for the merge patch."""
    now = timezone.now()
    appended: list[Event] = []
    created = 0
    last_seq = thread.last_seq
    if events:
        result = event_service.event_append_specs(
            thread=thread, specs=events, actor=actor, locked=True, activity_occurred=True,
            path=path, audit_details=audit_details if not audit_action else None)
        appended, created, last_seq = result.events, result.created, result.last_seq
    if keyed is not None:
        appended = _keyed_write(thread, keyed, now)
        created += len(appended)
        last_seq = thread.last_seq
    if values:
        # Only what differs (as stored text, key order included) makes a revision.
        values = {name: value for name, value in values.items()
                  if documents.dumps(value) != documents.dumps(getattr(thread, name))}
    fields = [*(values or {}), *(["state"] if state else [])]
    changed = bool(fields or (keyed and (keyed.fresh or keyed.retire or keyed.adopt)))
    if fields:
        # Re-read under the lock already held: the history counters were updated in SQL, and
        # a commit's locked read leaves the document out.
        thread = lock_thread(thread)
        document_write(thread=thread, actor=actor, reason=reason, values=values,
                       merge={"state": state} if state else None)
        if state and not audit_action:
            audit(actor=actor, action="state.patch", target=thread, workspace=thread.workspace,
                  revision=thread.revision, fields=["state"], reason=reason)
    elif keyed is not None and changed:
        # History alone, like an append, keeps the revision: a framework writing through
        # event by event (Nooa) would otherwise snapshot the document at every event.
        Thread.objects.filter(pk=thread.pk).update(updated_at=now)
    if keyed is not None and changed:
        Session.objects.filter(pk=thread.session_id).update(last_activity_at=now)
    if audit_action and changed:
        audit(actor=actor, action=audit_action, target=thread, workspace=thread.workspace,
              **(audit_details or {}), fields=fields, revision=thread.revision)
    return Written(events=appended, created=created, revision=thread.revision,
                   last_seq=last_seq, fields=fields)


def _keyed_write(thread: Thread, keyed: Keyed, now: datetime) -> list[Event]:
    """A keyed save's rows: adopted, replaced, added in their places, retired; the working
    context's counters follow (history). Returns the added rows, in keyed.fresh's order."""
    for event, item_key, digest in keyed.adopt:
        Event.objects.filter(pk=event.pk).update(item_key=item_key, payload_hash=digest)
        event.payload_hash = digest
    # Old versions leave the unique item-key index before their successors enter it.
    if keyed.rewrites:
        Event.objects.filter(pk__in=[old.pk for _, old in keyed.rewrites]).update(
            status=Event.Status.REPLACED, collapse=None)
    # Each row is inserted with its item key (a second UPDATE of every row cost more than the
    # insert: 3.8 s for 5,000 items on SQLite).
    added = history.events_add(thread=thread, specs=keyed.fresh, now=now, places=keyed.places)
    active_delta, token_delta = 0, 0
    for index, old in keyed.rewrites:
        new = added[index]
        if old.collapse_id is not None:  # inside the same collapse as the old one
            Event.objects.filter(pk=new.pk).update(collapse=old.collapse_id)
        Event.objects.filter(pk=old.pk).update(replaced_by=new.pk)
        if old.status == Event.Status.ACTIVE and old.visible:
            active_delta -= 1
            token_delta -= old.token_count
    if keyed.retire:
        Event.objects.filter(pk__in=[e.pk for e in keyed.retire]).update(
            status=Event.Status.REMOVED, collapse=None)
        for event in keyed.retire:
            if event.status == Event.Status.ACTIVE and event.visible:
                active_delta -= 1
                token_delta -= event.token_count
    if active_delta or token_delta:
        history.working_context_changed(thread=thread, now=now,
                                        left=history.Moved(-active_delta, -token_delta))
    return added


# --- a save in several parts ---------------------------------------------------------------

def stage(*, thread: Thread, batch_id: str, part: int, payload: Any) -> dict[str, Any] | None:
    """Keep an early part of a save under its batch id (a later delivery of the same part
    replaces it); the thread is untouched. Returns the save's answer instead when it was
    applied already. Under the thread's lock, so the last part's apply sees every part."""
    with transaction.atomic():
        lock_thread(thread, history_only=True)
        record, _ = CommitRecord.objects.select_for_update().get_or_create(
            thread=thread, batch_id=batch_id)
        if record.response is not None:
            return unpacked(thread, record.response)
        record.parts = {**record.parts, str(part): payload}
        record.save(update_fields=["parts"])
    return None


def staged_take(*, thread: Thread, batch_id: str) -> dict[str, Any]:
    """The staged parts of a save, by part number ("0", "1", ...), taken out of the store (the
    save's answer takes their place). Inside the save's transaction: a refusal puts them back."""
    record = CommitRecord.objects.filter(thread=thread, batch_id=batch_id,
                                         response__isnull=True).first()
    if record is None:
        return {}
    record.delete()
    return record.parts


# --- expiry --------------------------------------------------------------------------------

def commit_records_prune(
    *, now: datetime | None = None, hours: int | None = None, batch_size: int | None = None,
    max_batches: int | None = None,
) -> dict[str, int]:
    """Beat: delete the records (answers and staged parts) older than `hours`
    (COMMIT_REPLAY_HOURS; 0 keeps them all), the oldest first, in at most max_batches
    statements of at most batch_size rows.

    A batch takes the lowest ids, by the primary key, and deletes those of them that are old:
    ids grow with created_at, so no index on created_at is needed (one more per commit), and a
    batch that deletes fewer than it took has reached the window. A commit replayed after its
    record went is applied again: its events come back as stored by their client ids, a sync's
    items by their keys and its blobs are overwritten by key, so it duplicates nothing; events
    without a client id would be appended twice (docs/operations.md). An upload whose parts
    went is refused by its last part (409 incomplete_upload) and sent again."""
    hours = settings.COMMIT_REPLAY_HOURS if hours is None else hours
    batch_size = batch_size or settings.RETENTION_BATCH_SIZE
    budget = max_batches if max_batches is not None else settings.RETENTION_MAX_BATCHES
    done = {"batches": 0, "commit_records": 0}
    if hours <= 0:
        return done
    cutoff = (now or timezone.now()) - timedelta(hours=hours)
    while done["batches"] < budget:
        oldest = CommitRecord.objects.order_by("pk").values("pk")[:batch_size]
        deleted, _ = CommitRecord.objects.filter(pk__in=oldest, created_at__lt=cutoff).delete()
        done["batches"] += 1
        done["commit_records"] += deleted
        if deleted < batch_size:
            break
    return done
