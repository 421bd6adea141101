import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from contextstore.db import bulk_insert_events as _bulk_insert
from contextstore.errors import Conflict, InvalidInput, PayloadTooLarge
from contextstore.models import RUNTIME_TYPES, AuditLog, Event, Run, Thread
from contextstore.services import history
from contextstore.services.common import (
    Actor,
    audit,
    audit_row,
    insert_sql,
    lock_thread,
    one_statement,
    row_update_sql,
)
from contextstore.services.renders import llm_call_prepare, texts_keep
from contextstore.tokens import event_tokens

TYPE_MAX_LENGTH = 64
# What json.dumps(sort_keys=True, separators=(",", ":"), default=str) builds on every call.
_HASH_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
STRING_FIELDS = {"role": 32, "call_id": 200, "step": 200, "anchor": 200, "client_id": 200, "run_id": 200}
EVENT_FIELDS = frozenset({"type", "role", "content", "parts", "data", "run_id", "call_id", "step",
                          "anchor", "client_id", "visible", "occurred_at"})


@dataclass(slots=True)
class EventSpec:
    """One validated event to append, with its tokens counted before any lock is taken."""

    type: str
    role: str
    content: str
    parts: list | None
    data: Any
    run_id: str
    call_id: str
    step: str
    anchor: str
    client_id: str | None
    visible: bool
    occurred_at: datetime | None
    payload_hash: str
    token_count: int
    thinking_tokens: int


@dataclass
class AppendResult:
    events: list[Event]
    created: int


def event_type_problem(value: Any) -> str | None:
    """Why `value` is not an event type name, or None. Types are open (frameworks bring their own
    vocabularies): any 1-64 printable characters without whitespace; the documented types keep
    their meaning and every other name is shown as a generic entry."""
    if not isinstance(value, str) or not value:
        return "required; a name such as Message"
    if len(value) > TYPE_MAX_LENGTH:
        return f"at most {TYPE_MAX_LENGTH} characters"
    if not value.isprintable() or value.split() != [value]:  # split() cuts at any whitespace
        return "printable characters only, without whitespace or control characters"
    return None


def parse_stored_datetime(value: Any) -> datetime:
    """An ISO 8601 date-time that every supported database stores and reads back: a real date,
    naive meaning UTC, and within years 1-9999 once converted to UTC (PostgreSQL would store
    9999-12-31T23:59:59-12:00 as year 10000, which Python cannot read back). Raises ValueError
    saying what is wrong."""
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 date-time string")
    try:
        parsed = parse_datetime(value)
    except ValueError as exc:  # well formed but not a date, e.g. month 13
        raise ValueError(f"not a valid date-time ({exc})") from exc
    if parsed is None:
        raise ValueError("must be an ISO 8601 date-time")
    if timezone.is_naive(parsed):
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError("out of range: must fall within years 1-9999 in UTC") from exc


def _fail(index: int, field: str, message: str) -> InvalidInput:
    return InvalidInput(f"events[{index}].{field}: {message}",
                        details={f"events[{index}].{field}": message})


def event_spec(raw: Any, index: int) -> EventSpec:
    if not isinstance(raw, dict):
        raise _fail(index, "", "each event must be a JSON object")
    unknown = raw.keys() - EVENT_FIELDS
    if unknown:
        raise _fail(index, sorted(unknown)[0], "unknown field")
    etype: Any = raw.get("type")  # a str once event_type_problem finds none
    problem = event_type_problem(etype)
    if problem:
        raise _fail(index, "type", problem)
    content = raw.get("content", "")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise _fail(index, "content", "must be a string")
    limit = settings.CONTEXTSTORE["MAX_EVENT_CONTENT_BYTES"]
    if len(content) * 4 > limit and len(content.encode()) > limit:  # at most 4 bytes a character
        raise PayloadTooLarge(f"events[{index}].content is larger than {limit} bytes.",
                              details={f"events[{index}].content": f"at most {limit} bytes"})
    parts = raw.get("parts")
    if parts is not None and not isinstance(parts, list):
        raise _fail(index, "parts", "must be a list")
    strings: dict[str, str] = {}
    for field, max_length in STRING_FIELDS.items():
        value = raw.get(field)
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise _fail(index, field, "must be a string")
        if len(value) > max_length:
            raise _fail(index, field, f"at most {max_length} characters")
        strings[field] = value
    visible = raw.get("visible")
    if visible is None:
        visible = etype not in RUNTIME_TYPES
    elif not isinstance(visible, bool):
        raise _fail(index, "visible", "must be true or false")
    occurred_at = raw.get("occurred_at")
    if occurred_at is not None:
        try:
            occurred_at = parse_stored_datetime(occurred_at)
        except ValueError as exc:
            raise _fail(index, "occurred_at", str(exc)) from exc
    payload = {k: v for k, v in raw.items() if k != "client_id"}  # the encoder sorts the keys
    payload_hash = hashlib.sha256(_HASH_JSON.encode(payload).encode()).hexdigest()
    total, thinking = event_tokens(content, parts, type_=etype, data=raw.get("data"))
    return EventSpec(
        type=etype, role=strings["role"], content=content, parts=parts, data=raw.get("data"),
        run_id=strings["run_id"], call_id=strings["call_id"], step=strings["step"],
        anchor=strings["anchor"], client_id=strings["client_id"] or None, visible=visible,
        occurred_at=occurred_at, payload_hash=payload_hash, token_count=total,
        thinking_tokens=thinking,
    )


def _runs_for(thread: Thread, run_ids: Iterable[str]) -> dict[str, Run]:
    """Existing runs by run_id, creating the missing ones. The caller holds the thread lock."""
    wanted = set(run_ids)
    if not wanted:
        return {}
    runs = {r.run_id: r for r in Run.objects.filter(thread=thread, run_id__in=wanted)}
    missing = [Run(thread=thread, run_id=rid) for rid in sorted(wanted - set(runs))]
    if missing:
        for run in Run.objects.bulk_create(missing):
            runs[run.run_id] = run
    return runs


def event_append(*, thread: Thread, events: list[Any], actor: Actor) -> AppendResult:
    """Append a batch of events to a thread.

    Idempotent per client_id: the same client_id with the same payload returns the stored event;
    with a different payload the whole batch is refused with a conflict. Sequence numbers are
    gap-free under concurrent writers (the thread row is locked), and counters are updated in
    the same transaction. The cost depends on the batch, not on the thread's history.
    """
    if not isinstance(events, list) or not events:
        raise InvalidInput("events must be a non-empty list.", details={"events": "non-empty list"})
    max_batch = settings.CONTEXTSTORE["MAX_EVENTS_PER_BATCH"]
    if len(events) > max_batch:
        raise PayloadTooLarge(f"At most {max_batch} events per batch; got {len(events)}.",
                              details={"events": f"at most {max_batch} per batch"})
    specs = [event_spec(raw, i) for i, raw in enumerate(events)]
    specs, call_texts = llm_call_prepare(thread=thread, specs=specs)  # render_id, data.messages
    now = timezone.now()

    outcome = None
    if connection.vendor == "postgresql":
        try:
            outcome = _append_folded(thread, specs, call_texts, actor, now)
        except _Replayed:
            outcome = None  # rolled back; the path below reads the stored events
    if outcome is None:
        outcome = _append_checked(thread, specs, call_texts, actor, now)
    thread, final, created = outcome
    if created:
        from contextstore.services.summaries import summarization_check

        summarization_check(thread=thread)
    return AppendResult(events=final, created=created)


class _Replayed(Exception):
    """The batch names a client_id already stored (or twice): take the path that reads them."""


def _append_folded(
    thread: Thread, specs: list[EventSpec], call_texts: list[str], actor: Actor, now: datetime
) -> tuple[Thread, list[Event], int]:
    """The common append on PostgreSQL, any batch size, in four round trips: BEGIN, the
    thread's row lock, one statement (the rows, the thread's and session's counters, the audit
    row naming the range) and COMMIT. A client_id already stored is not looked up first: the
    insert skips it (ON CONFLICT DO NOTHING), and then the whole transaction is rolled back
    (_Replayed). For 100 events this is faster than the checked path's lookup, ids and COPY."""
    client_ids = [s.client_id for s in specs if s.client_id]
    if len(set(client_ids)) != len(client_ids):
        raise _Replayed
    with transaction.atomic():
        thread = lock_thread(thread, history_only=True)
        texts_keep(call_texts)
        runs = _runs_for(thread, (s.run_id for s in specs if s.run_id))
        first = history.seq_allocate(thread, len(specs))
        objs = [history.event_build(thread=thread, seq=seq, spec=spec, now=now,
                                    run=runs.get(spec.run_id))
                for seq, spec in enumerate(specs, first)]
        # Compiled first: that stamps created_at, which the thread's last_event_at follows.
        inserted = insert_sql(Event, objs, returning=("id", "seq"), ignore_conflicts=True)
        updates = [row_update_sql(*update) for update in
                   history.history_added_updates(thread=thread, events=objs, now=now)]
        record = audit_row(actor=actor, action="events.append", target=thread,
                           workspace=thread.workspace, count=len(objs), first_seq=objs[0].seq,
                           last_seq=objs[-1].seq)
        rows = one_statement(inserted, *updates, insert_sql(AuditLog, [record]),
                             binary=len(objs) > 1)  # the UNNEST arrays
        if len(rows) != len(objs):
            raise _Replayed
        ids = dict((seq, pk) for pk, seq in rows)
        for obj in objs:
            obj.pk = ids[obj.seq]
            obj._state.adding = False
        history.runs_count(objs)
        history.models_seen(thread=thread, events=objs)
        _step_results(objs)
    return thread, objs, len(objs)


def _append_checked(
    thread: Thread, specs: list[EventSpec], call_texts: list[str], actor: Actor, now: datetime
) -> tuple[Thread, list[Event], int]:
    """Any append (SQLite's, and a replay on PostgreSQL): stored client_ids are read first
    (replays, conflicts); big batches COPY."""
    with transaction.atomic():
        thread = lock_thread(thread, history_only=True)
        texts_keep(call_texts)
        client_ids = {s.client_id for s in specs if s.client_id}
        stored = (
            {e.client_id: e for e in Event.objects.filter(thread=thread, client_id__in=client_ids)}
            if client_ids else {}
        )
        results: list[Event | None] = [None] * len(specs)
        fresh: list[tuple[int, EventSpec]] = []
        batch_hashes: dict[str, str] = {}
        for i, spec in enumerate(specs):
            if spec.client_id is None:
                fresh.append((i, spec))
                continue
            known = stored.get(spec.client_id)
            expected = known.payload_hash if known else batch_hashes.get(spec.client_id)
            if expected is not None and expected != spec.payload_hash:
                raise Conflict(
                    f"client_id {spec.client_id!r} was already used for a different event.",
                    code="idempotency_conflict",
                    details={f"events[{i}].client_id": spec.client_id},
                )
            if known is not None:
                results[i] = known
            elif spec.client_id not in batch_hashes:
                batch_hashes[spec.client_id] = spec.payload_hash
                fresh.append((i, spec))

        created = _insert(thread, fresh, results, now)
        if created:
            audit(actor=actor, action="events.append", target=thread, workspace=thread.workspace,
                  count=len(created), first_seq=created[0].seq, last_seq=created[-1].seq)

    by_client: dict[str | None, Event] = {e.client_id: e for e in results if e is not None and e.client_id}
    final = [e if e is not None else by_client[specs[i].client_id] for i, e in enumerate(results)]
    return thread, final, len(created)


def _insert(
    thread: Thread, fresh: list[tuple[int, EventSpec]], results: list[Event | None], now: datetime
) -> list[Event]:
    if not fresh:
        return []
    runs = _runs_for(thread, (s.run_id for _, s in fresh if s.run_id))
    first = history.seq_allocate(thread, len(fresh))
    objs = [history.event_build(thread=thread, seq=seq, spec=spec, now=now, run=runs.get(spec.run_id))
            for seq, (_, spec) in enumerate(fresh, first)]
    _bulk_insert(objs, now)
    for (i, _), obj in zip(fresh, objs, strict=True):
        results[i] = obj
    history.history_added(thread=thread, events=objs, now=now)
    _step_results(objs)
    return objs


def _step_results(objs: list[Event]) -> None:
    """clientai's step results of a run: the latest StepResult per step (not a counter)."""
    steps: dict[int, dict[str, Any]] = defaultdict(dict)
    runs_by_pk = {}
    for e in objs:
        if e.run is not None and e.type == "StepResult" and e.step:
            data = e.data if isinstance(e.data, dict) else {}
            steps[e.run.pk][e.step] = data.get("result", e.content)
            runs_by_pk[e.run.pk] = e.run
    for pk, found in steps.items():
        run = runs_by_pk[pk]
        run.refresh_from_db(fields=["step_results"])
        run.step_results = {**run.step_results, **found}
        run.save(update_fields=["step_results"])
