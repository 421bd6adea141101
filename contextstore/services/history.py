"""History bookkeeping, in one place: the one door every new row of a thread goes through
(`events_add`: seq allocation, building the Event from a validated EventSpec, the insert;
`events_add_many`, the same for many threads in one insert), and
every denormalised counter that follows the event rows.

Every service that adds events (append, commit, sync, import, fork, the Summary of a collapse
and so the summary worker) does it through `events_add`; every service that moves events in or
out of the working context moves them with `events_move` (collapse, clear, un-clear, inline or
in a job's batches) or tells `working_context_changed` (undo, retract, a sync's rewrites and
removals); rows deleted (retention, erasure) leave through `history_removed`, a deleted fork
through `thread_removed`. Each inside the caller's transaction, holding the thread's row lock,
so the counters always equal a recount from the rows (see `counters_recount`, used by the
property test). No other module writes them:

- Thread: last_seq (newest seq), event_count / token_total / error_count (every row),
  active_event_count / active_tokens (visible rows with status active: the working context),
  last_event_at (when the newest row was written);
- Session: thread_count, event_count, error_count, token_total, cost_total (of its threads'
  rows, any status; cost from LLMComplete events; error_count counts rows with is_error, Error
  events and failed tool results (toolcalls.event_failed), so an error stays counted after it
  is retracted, cleared or collapsed: the thread and session had it); and the
  set of model names its LLM calls reported (SessionModel rows, see `_models_seen`);
- Run: event_count, input_tokens, output_tokens, cost (of the rows that name the run), and
  clientai's step results (the latest StepResult per step).
"""

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection
from django.db.models import Count, F, Max, Q, QuerySet, Sum

from contextstore.db import (
    PreparedGet,
    bulk_insert_events,
    insert_sql,
    one_statement,
    row_update_sql,
    rows_update,
)
from contextstore.eventspec import EventSpec
from contextstore.models import Event, Run, Session, SessionModel, Thread
from contextstore.selectors.calls import CALL_END, CALL_START
from contextstore.selectors.trends import _call_columns as call_columns_sql
from contextstore.selectors.trends import _failed as failed_sql
from contextstore.selectors.trends import _parsed as parsed_sql
from contextstore.toolcalls import event_failed
from contextstore.usage import event_cost, event_usage, metric  # noqa: F401 - re-exported

# (position, status) of a new row that does not stand at its seq in the working context.
Place = tuple[int | None, str]
_ORDINARY: Place = (None, Event.Status.ACTIVE)


# --- the door: new rows --------------------------------------------------------------------------

class Skipped(Exception):
    """A fast path met what only its checked path decides: nothing it did may be kept, the
    caller rolls its transaction back and runs the checked path (commits.thread_commit,
    events.event_append_specs). Raised by the folded insert (events_add's fold_with) for a row
    whose client_id is stored already, by the fast append for a client_id named twice, and by a
    save's fast path for a batch whose first delivery may have ended while it waited."""


def events_add(
    *, thread: Thread, specs: Sequence[EventSpec], now: datetime,
    places: Sequence[Place] | None = None,
    fold_with: Callable[[list[Event]], list[tuple[str, tuple]]] | None = None,
    activity_occurred: bool = False,
) -> list[Event]:
    """Add rows to a thread: each spec becomes an Event at the next seq (gap-free, creation
    order), the runs it names are made, and the thread's, session's and runs' counters, the
    session's model names and the runs' step results follow. The caller holds the thread's row
    lock (or created the thread in this transaction) and its in-memory counters are updated
    too, so it can go on using them. Returns the stored rows, ids set, in the specs' order.

    places: per spec, (position, status) of a row that does not stand at its seq in the working
    context (a collapse's Summary, an import's or a fork's rows, a sync item rewritten in place);
    (None, "active") is an ordinary row. Without places every row is ordinary.

    fold_with (PostgreSQL, the append): statements built from the new rows (the audit row naming
    them) to run with their INSERT and the counters' UPDATEs as one statement, one round trip. A
    row whose client_id is stored already is then skipped rather than refused, and Skipped is
    raised. Without it, big batches COPY (db.bulk_insert_events).

    activity_occurred: the session's last activity is the newest row's occurred_at, not `now`
    (a commit: the framework's clock, ADK's last_update_time), set by the same update.
    """
    if not specs:
        return []
    runs = _runs_for(thread, (s.run_id for s in specs if s.run_id))
    objs = [event_build(thread=thread, seq=seq, spec=spec, now=now, run=runs.get(spec.run_id),
                        position=position, status=status)
            for seq, spec, (position, status) in zip(
                range(thread.last_seq + 1, thread.last_seq + 1 + len(specs)), specs,
                places or [_ORDINARY] * len(specs), strict=True)]
    if fold_with is not None:
        # Compiled first: that stamps created_at, which the thread's last_event_at follows.
        # An item key is a sync's: other rows leave it out (one value less to send).
        leave_out = _NEW_ROW_NULLS + (("item_key",) if all(o.item_key is None for o in objs) else ())
        inserted = insert_sql(Event, objs, returning=("id", "seq"), ignore_conflicts=True,
                              leave_out=leave_out)
        folded = [row_update_sql(*update) for update in _added_updates(
            thread=thread, events=objs, now=now, activity_occurred=activity_occurred)]
        folded += fold_with(objs)
        # The runs' counters too, while the statement stays one psycopg converts once per
        # process (a round trip costs more than the conversion: ~0.1 ms each on loopback).
        runs_counted = _runs_count_sql(objs)
        if sum(len(params) for _, params in [inserted, *folded, *runs_counted]) <= _CACHED_VALUES:
            folded, runs_counted = [*folded, *runs_counted], []
        rows = one_statement(inserted, *folded, binary=len(objs) > 1)  # the UNNEST arrays
        if len(rows) != len(objs):
            raise Skipped
        if runs_counted:
            with connection.cursor() as cursor:
                for statement in runs_counted:
                    cursor.execute(*statement)
        ids = dict((seq, pk) for pk, seq in rows)
        for obj in objs:
            obj.pk = ids[obj.seq]
            obj._state.adding = False
        _models_seen(thread=thread, events=objs)
    else:
        bulk_insert_events(objs, now)
        history_added(thread=thread, events=objs, now=now, activity_occurred=activity_occurred)
    _step_results(objs)
    figures_record(objs)
    return objs


FIGURE_COLUMNS = ("model", "failed", "cost", "input", "output", "cache_read", "cache_input", "latency")


def figures_insert_sql(where: str, params: list[Any]) -> tuple[str, list[Any]]:
    """The INSERT that stores the CallFigure rows of the events matching `where` (SQL over
    contextstore_event, written by the caller) that are calls or errors: the same expressions
    the JSON way reads (selectors/trends.py), so the figures are the same. A row stored
    already is skipped. For services/history.py and the migration that fills the table."""
    pg = connection.vendor == "postgresql"
    said, derived = call_columns_sql(pg)
    kept = dict(derived)
    kept["model"], kept["failed"] = "model", "failed"
    # the call's LLMCallStart, as selectors/calls pairs them (the newest before it in its
    # thread with its call_id; without one, of its run)
    started = ("(SELECT s.occurred_at FROM contextstore_event s WHERE s.thread_id = r.thread_id "
               "AND s.type = %s AND s.seq < r.seq AND s.call_id = r.call_id AND (s.call_id > '' "
               "OR COALESCE(s.run_id, 0) = COALESCE(r.run_id, 0)) ORDER BY s.seq DESC LIMIT 1)")
    return (f"WITH r AS MATERIALIZED (SELECT id, type, thread_id, seq, call_id, run_id, occurred_at, "
            f"{parsed_sql(pg)} AS j FROM contextstore_event "
            f"WHERE ({where}) AND (type IN (%s, %s) OR is_error)), "
            f"b AS MATERIALIZED (SELECT id, occurred_at, CASE WHEN type = %s THEN {started} END AS started, "
            + ", ".join(f"{v} AS {k}" for k, v in said.items())
            + f", {failed_sql(pg)} AS failed FROM r) "
            f"INSERT INTO contextstore_callfigure (event_id, {', '.join(FIGURE_COLUMNS)}) "
            f"SELECT id, {', '.join(kept[k] for k in FIGURE_COLUMNS)} FROM b WHERE true "
            "ON CONFLICT DO NOTHING", [*params, CALL_START, CALL_END, CALL_END, CALL_START])


def figures_record(events: Sequence[Event]) -> None:
    """Store the CallFigure rows of the stored `events` that are model calls or errors: the
    numbers trends read (selectors/trends.py), extracted from their JSON once, here, by one
    INSERT … SELECT (none when no row is a call or an error)."""
    pks = [e.pk for e in events if e.is_error or e.type in (CALL_START, CALL_END)]
    if pks:
        figures_store(pks)


def figures_store(pks: Sequence[int]) -> None:
    """The CallFigure rows of the events with these ids (those stored already kept)."""
    if connection.vendor == "postgresql":
        sql, params = figures_insert_sql("id = ANY(%s)", [list(pks)])
    else:
        sql, params = figures_insert_sql("id IN (SELECT value FROM json_each(%s))", [json.dumps(list(pks))])
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def events_add_many(*, batches: Sequence[tuple[Thread, Sequence[EventSpec]]],
                    now: datetime) -> list[list[Event]]:
    """events_add for many threads at once, in a number of statements that does not grow with
    them (OTLP derivation's pass of many new conversations): every row of every thread in one
    insert (COPY on PostgreSQL, db.bulk_insert_events), the runs they name read and made in one
    statement each (a new run is made with its counters counted), and the threads', sessions'
    and existing runs' counters each moved by one UPDATE for all. Ordinary rows only (no
    places, no fold). The caller holds each thread's row lock (or created the threads in this
    transaction); their in-memory counters move too. Returns each batch's stored rows."""
    batches = [(thread, specs) for thread, specs in batches if specs]
    if not batches:
        return []
    if len({thread.pk for thread, _ in batches}) != len(batches):
        raise ValueError("events_add_many takes each thread once")
    added: list[list[Event]] = []
    for thread, specs in batches:
        added.append([event_build(thread=thread, seq=seq, spec=spec, now=now) for seq, spec in zip(
            range(thread.last_seq + 1, thread.last_seq + 1 + len(specs)), specs, strict=True)])
    runs = _runs_for_many(batches, added)
    objs = [e for events in added for e in events]
    bulk_insert_events(objs, now)
    figures_record(objs)
    threads: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
    sessions: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    for (thread, _), events in zip(batches, added, strict=True):
        (_, _, values, _), (_, session_pk, session_values, adds) = _added_updates(
            thread=thread, events=events, now=now)
        threads.append((thread.pk, values, {}))
        total = sessions.setdefault(session_pk, (session_values, dict.fromkeys(adds, 0)))[1]
        for name, amount in adds.items():
            total[name] += amount
    rows_update(Thread, threads)
    rows_update(Session, [(pk, values, adds) for pk, (values, adds) in sessions.items()])
    names = {(thread.session_id, model) for thread, events in zip((t for t, _ in batches), added, strict=True)
             for e in events if (model := model_of(e)) is not None}
    if names:
        SessionModel.objects.bulk_create([SessionModel(session_id=pk, model=n) for pk, n in sorted(names)],
                                         ignore_conflicts=True)
    if runs:
        _step_results(objs)
    return added


def _runs_for_many(batches: Sequence[tuple[Thread, Sequence[EventSpec]]],
                   added: list[list[Event]]) -> list[Run]:
    """The runs new rows of many threads name, linked to them and counted: existing ones read in
    one statement and moved by one UPDATE, missing ones made with their counters in one INSERT."""
    per_run: dict[tuple[int, str], list[Event]] = defaultdict(list)
    threads = {}
    for (thread, specs), events in zip(batches, added, strict=True):
        threads[thread.pk] = thread
        for spec, event in zip(specs, events, strict=True):
            if spec.run_id:
                per_run[(thread.pk, spec.run_id)].append(event)
    if not per_run:
        return []
    found = Q()
    for thread_pk in {pk for pk, _ in per_run}:
        found |= Q(thread_id=thread_pk, run_id__in=sorted({r for pk, r in per_run if pk == thread_pk}))
    existing = {(r.thread_id, r.run_id): r for r in Run.objects.filter(found)}
    missing = []
    for (thread_pk, run_id), events in per_run.items():
        run = existing.get((thread_pk, run_id))
        if run is None:
            run = Run(thread=threads[thread_pk], run_id=run_id)
            missing.append(run)
        for name, amount in _run_amounts(events).items():  # read under the threads' locks
            setattr(run, name, getattr(run, name) + amount)  # in memory; stored below
    Run.objects.bulk_create(missing)
    rows_update(Run, [(run.pk, {}, _run_amounts(per_run[key])) for key, run in existing.items()])
    runs = {**existing, **{(r.thread_id, r.run_id): r for r in missing}}
    for key, events in per_run.items():
        for event in events:
            event.run_id = runs[key].pk
            _EVENT_RUN.set_cached_value(event, runs[key])
    return list(runs.values())


def _run_amounts(events: Iterable[Event]) -> dict[str, Any]:
    """What rows add to the run they name (its counters)."""
    amounts: dict[str, Any] = {"event_count": 0, "input_tokens": 0, "output_tokens": 0, "cost": Decimal(0)}
    for e in events:
        used_in, used_out = event_usage(e)
        amounts["event_count"] += 1
        amounts["input_tokens"] += used_in
        amounts["output_tokens"] += used_out
        amounts["cost"] += event_cost(e)
    return amounts


_RUN = PreparedGet(lambda thread_id, run_id: Run.objects.filter(thread=thread_id, run_id=run_id),
                   text=(1,))


def _runs_for(thread: Thread, run_ids: Iterable[str]) -> dict[str, Run]:
    """Existing runs by run_id, creating the missing ones. The caller holds the thread lock."""
    wanted = set(run_ids)
    if not wanted:
        return {}
    if len(wanted) == 1 and connection.vendor == "postgresql":
        return {run.run_id: run for run in [_run_made(thread, next(iter(wanted)))]}
    if len(wanted) == 1:  # the common case (a framework's run), by SQL compiled once
        found = _RUN.get(thread.pk, next(iter(wanted)))
        runs = {found.run_id: found} if found is not None else {}
    else:
        runs = {r.run_id: r for r in Run.objects.filter(thread=thread, run_id__in=wanted)}
    missing = [Run(thread=thread, run_id=rid) for rid in sorted(wanted - set(runs))]
    if missing:
        for run in Run.objects.bulk_create(missing):
            runs[run.run_id] = run
    return runs


def _run_made(thread: Thread, run_id: str) -> Run:
    """The run of this thread named `run_id`, made if missing, in one round trip (PostgreSQL):
    the INSERT skips an existing run (its unique key), and the SELECT, which sees the database
    as it was before the INSERT, finds it. The caller holds the thread lock, so no other
    transaction makes the run meanwhile. The instance holds the run's id and name only (what an
    event's row and answer need; _step_results reads the rest itself)."""
    insert, params = insert_sql(Run, [Run(thread=thread, run_id=run_id)], returning=("id",),
                                ignore_conflicts=True)
    with connection.cursor() as cursor:
        cursor.execute(f"WITH made AS ({insert}) SELECT id FROM made UNION ALL "
                       f"SELECT id FROM {Run._meta.db_table} WHERE thread_id = %s AND run_id = %s",
                       [*params, thread.pk, run_id])
        [(pk,)] = cursor.fetchall()
    run = Run(pk=pk, thread_id=thread.pk, run_id=run_id)
    run._state.adding = False
    return run


# Event's columns in order, with their defaults (constants: no Event field has a callable
# default). Building an Event positionally from these skips Model.__init__'s keyword handling
# and related-object descriptors, which cost more per event than the rest of the append's Python.
_EVENT_DEFAULTS = {f.attname: f.get_default() for f in Event._meta.concrete_fields}
# The links a new row never has (a later rewrite, collapse or clear sets them): left out of the
# folded insert, which keeps the append's one statement within psycopg's 50 cached values.
_NEW_ROW_NULLS = ("replaced_by", "collapse", "cleared_by")
# psycopg splits a client-side bound statement's placeholders once per process when it has at
# most this many values (and 4 kB of text); past it, on every call (psycopg._queries).
_CACHED_VALUES = 50
_EVENT_THREAD = Event._meta.get_field("thread")
_EVENT_RUN = Event._meta.get_field("run")


def event_build(
    *, thread: Thread, seq: int, spec: EventSpec, now: datetime, run: Run | None = None,
    position: int | None = None, status: str = Event.Status.ACTIVE,
) -> Event:
    """An unsaved Event from a validated spec (events_add builds each new row with it). An
    ordinary event stands at its seq; a Summary made by a collapse, or a sync item's rewrite,
    stands earlier (its position is given). The same instance as Event(thread=thread, run=run,
    ...) (thread and run cached on it), built positionally."""
    event = Event(*{
        **_EVENT_DEFAULTS, "thread_id": thread.pk, "seq": seq,
        "position": seq if position is None else position, "type": spec.type, "role": spec.role,
        "content": spec.content, "parts": spec.parts, "data": spec.data,
        "run_id": None if run is None else run.pk, "call_id": spec.call_id, "step": spec.step,
        "anchor": spec.anchor, "client_id": spec.client_id, "payload_hash": spec.payload_hash,
        "token_count": spec.token_count, "thinking_tokens": spec.thinking_tokens,
        "visible": spec.visible,
        "is_error": event_failed(spec.type, spec.role, spec.content, spec.parts, spec.data),
        "status": status, "occurred_at": spec.occurred_at or now,
        "item_key": spec.item_key,
    }.values())
    event._state.db = thread._state.db or DEFAULT_DB_ALIAS  # as assigning `thread` does
    _EVENT_THREAD.set_cached_value(event, thread)
    _EVENT_RUN.set_cached_value(event, run)
    return event


def spec_of(event: Event) -> EventSpec:
    """A stored event as the spec of its copy in another thread (fork): the same content, hash
    and counts; runs stay with the thread that ran them."""
    return EventSpec(
        type=event.type, role=event.role, content=event.content, parts=event.parts,
        data=event.data, run_id="", call_id=event.call_id, step=event.step, anchor=event.anchor,
        client_id=event.client_id, visible=event.visible, occurred_at=event.occurred_at,
        payload_hash=event.payload_hash, token_count=event.token_count,
        thinking_tokens=event.thinking_tokens,
    )


# --- counters ----------------------------------------------------------------------------------

def _working(events: Iterable[Event]) -> tuple[int, int]:
    """(count, tokens) of the events that the working context counts: visible and active."""
    count = tokens = 0
    for e in events:
        if e.visible and e.status == Event.Status.ACTIVE:
            count += 1
            tokens += e.token_count
    return count, tokens


def history_added(*, thread: Thread, events: list[Event], now: datetime,
                  activity_occurred: bool = False) -> None:
    """Count rows just inserted (any status) on their thread, session and runs, and the session's
    model names: events_add's counting, and that of a loader that inserts rows by itself (the
    browser test's 100,000-event thread, loaded faster than any ORM insert). The thread is
    locked and fresh; its in-memory counters move too."""
    for model, pk, values, amounts in _added_updates(thread=thread, events=events, now=now,
                                                     activity_occurred=activity_occurred):
        model.objects.filter(pk=pk).update(
            **values, **{name: F(name) + amount for name, amount in amounts.items()})
    _runs_count(events)
    _models_seen(thread=thread, events=events)


def _added_updates(
    *, thread: Thread, events: list[Event], now: datetime, activity_occurred: bool = False
) -> list[tuple[type[Thread] | type[Session], int, dict[str, Any], dict[str, Any]]]:
    """The thread's and session's counter updates for new rows (any status), as (model, pk,
    values to set, amounts to add) for events_add to run (or fold into one statement); the
    thread's in-memory counters move now."""
    count, tokens = _working(events)
    errors = sum(1 for e in events if e.is_error)
    thread.last_seq = max(thread.last_seq, max(e.seq for e in events))
    thread.event_count += len(events)
    thread.token_total += sum(e.token_count for e in events)
    thread.error_count += errors
    thread.active_event_count += count
    thread.active_tokens += tokens
    newest = max(e.created_at or now for e in events)
    thread.last_event_at = max(thread.last_event_at or newest, newest)
    thread.updated_at = now
    return [
        (Thread, thread.pk, dict(
            last_seq=thread.last_seq, event_count=thread.event_count,
            token_total=thread.token_total, active_event_count=thread.active_event_count,
            active_tokens=thread.active_tokens, error_count=thread.error_count,
            last_event_at=thread.last_event_at, updated_at=now), {}),
        (Session, thread.session_id, dict(
            last_activity_at=max(e.occurred_at for e in events) if activity_occurred else now), dict(
            event_count=len(events),
            error_count=errors,
            token_total=sum(e.token_count for e in events),
            cost_total=sum((event_cost(e) for e in events), Decimal(0)))),
    ]


def history_removed(*, thread: Thread, events: list[Event], now: datetime) -> None:
    """Take rows about to be deleted (retention, erasure) out of every counter they fed: the
    inverse of history_added. The thread is locked and fresh; its in-memory counters move too.
    The session's last activity stays: deleting is not activity."""
    count, tokens = _working(events)
    errors = sum(1 for e in events if e.is_error)
    total_tokens = sum(e.token_count for e in events)
    cost = sum((event_cost(e) for e in events), Decimal(0))
    thread.event_count -= len(events)
    thread.token_total -= total_tokens
    thread.error_count -= errors
    thread.active_event_count -= count
    thread.active_tokens -= tokens
    thread.expired_seq = max(thread.expired_seq, max(e.seq for e in events))
    if thread.last_event_at is not None and any(e.created_at >= thread.last_event_at for e in events):
        gone = {e.pk for e in events}
        thread.last_event_at = (Event.objects.filter(thread=thread).exclude(pk__in=gone)
                                .aggregate(newest=Max("created_at"))["newest"])
    Thread.objects.filter(pk=thread.pk).update(
        event_count=thread.event_count, token_total=thread.token_total,
        error_count=thread.error_count, active_event_count=thread.active_event_count,
        active_tokens=thread.active_tokens, expired_seq=thread.expired_seq,
        last_event_at=thread.last_event_at, updated_at=now)
    Session.objects.filter(pk=thread.session_id).update(
        event_count=F("event_count") - len(events), error_count=F("error_count") - errors,
        token_total=F("token_total") - total_tokens, cost_total=F("cost_total") - cost)
    per_run: dict[int, list[Any]] = {}
    for e in events:
        if e.run_id is not None:
            agg = per_run.setdefault(e.run_id, [0, 0, 0, Decimal(0)])
            used_in, used_out = event_usage(e)
            agg[0] += 1
            agg[1] += used_in
            agg[2] += used_out
            agg[3] += event_cost(e)
    for pk, (n, used_in, used_out, run_cost) in per_run.items():
        Run.objects.filter(pk=pk).update(
            event_count=F("event_count") - n, input_tokens=F("input_tokens") - used_in,
            output_tokens=F("output_tokens") - used_out, cost=F("cost") - run_cost)
    names = {name for e in events if (name := model_of(e)) is not None}
    if names:  # keep the names rows that stay still report
        gone_pks = [e.pk for e in events]
        names -= _models_of(Event.objects.filter(thread__session_id=thread.session_id)
                                    .exclude(pk__in=gone_pks))
        SessionModel.objects.filter(session_id=thread.session_id, model__in=names).delete()


def seqs_expired_before(*, thread: Thread, seq: int) -> None:
    """An import of a thread whose oldest rows had expired: its seqs run on from `seq`, as if
    retention had deleted the rows before it here. The thread is new and has no rows yet."""
    thread.last_seq = thread.expired_seq = seq - 1
    Thread.objects.filter(pk=thread.pk).update(last_seq=thread.last_seq, expired_seq=thread.expired_seq)


def _runs_count(events: list[Event]) -> None:
    """Count new rows on the runs they name."""
    with connection.cursor() as cursor:  # the UPDATE's text written once (db.row_update_sql)
        for statement in _runs_count_sql(events):
            cursor.execute(*statement)


def _runs_count_sql(events: list[Event]) -> list[tuple[str, tuple]]:
    """The UPDATEs that count new rows on the runs they name (one per run; the usage and cost
    columns only where they move)."""
    per_run: dict[int, dict[str, Any]] = defaultdict(
        lambda: {"events": 0, "in": 0, "out": 0, "cost": Decimal(0)})
    for e in events:
        if e.run_id is None:
            continue
        agg = per_run[e.run_id]
        agg["events"] += 1
        used_in, used_out = event_usage(e)
        agg["in"] += used_in
        agg["out"] += used_out
        agg["cost"] += event_cost(e)
    return [row_update_sql(Run, pk, {}, {"event_count": agg["events"], **{
        name: amount for name, amount in (("input_tokens", agg["in"]), ("output_tokens", agg["out"]),
                                          ("cost", agg["cost"])) if amount}})
        for pk, agg in per_run.items()]


def _step_results(events: list[Event]) -> None:
    """clientai's step results of a run: the latest StepResult per step (not a counter, but it
    follows the rows as the counters do)."""
    steps: dict[int, dict[str, Any]] = defaultdict(dict)
    runs_by_pk = {}
    for e in events:
        if e.run is not None and e.type == "StepResult" and e.step:
            data = e.data if isinstance(e.data, dict) else {}
            steps[e.run.pk][e.step] = data.get("result", e.content)
            runs_by_pk[e.run.pk] = e.run
    for pk, found in steps.items():
        run = runs_by_pk[pk]
        run.refresh_from_db(fields=["step_results"])
        run.step_results = {**run.step_results, **found}
        run.save(update_fields=["step_results"])


CALL_TYPES = ("LLMCallStart", "LLMComplete")


def model_of(event: Event) -> str | None:
    """The model an LLM-call event names (`data.model`, a non-empty string without NUL: a name),
    cut to 200."""
    if event.type not in CALL_TYPES or not isinstance(event.data, dict):
        return None
    value = event.data.get("model")
    return value[:200] if isinstance(value, str) and value.strip() and "\x00" not in value else None


def _models_seen(*, thread: Thread, events: Iterable[Event]) -> None:
    """Record the model names new rows report on their session. Concurrent appends naming
    the same model both insert; the unique (session, model) row makes the second a no-op.
    No query at all when no row names a model (the usual append)."""
    names = {name for e in events if (name := model_of(e)) is not None}
    if names:
        SessionModel.objects.bulk_create(
            [SessionModel(session_id=thread.session_id, model=n) for n in sorted(names)],
            ignore_conflicts=True)


def _models_of(events: QuerySet[Event]) -> set[str]:
    return {name for e in events.filter(type__in=CALL_TYPES).only("type", "data").iterator(chunk_size=2000)
            if (name := model_of(e)) is not None}


@dataclass
class Moved:
    """Visible events that entered or left the working context, by count and tokens."""

    count: int = 0
    tokens: int = 0

    @classmethod
    def of(cls, events: Iterable[Event]) -> "Moved":
        visible = [e for e in events if e.visible]
        return cls(len(visible), sum(e.token_count for e in visible))

    @classmethod
    def counted(cls, events: QuerySet[Event]) -> "Moved":
        """The same, counted by the database: a clear of 50,000 events reads no rows."""
        got = events.aggregate(count=Count("pk", filter=Q(visible=True)),
                               tokens=Sum("token_count", filter=Q(visible=True)))
        return cls(got["count"], got["tokens"] or 0)


def working_context_changed(
    *, thread: Thread, now: datetime, entered: Moved | None = None, left: Moved | None = None
) -> None:
    """Events changed status (collapse, undo, clear, un-clear, retract, a sync's rewrites and
    removals): only the working-context counters move. The thread is locked and fresh."""
    entered, left = entered or Moved(), left or Moved()
    thread.active_event_count += entered.count - left.count
    thread.active_tokens += entered.tokens - left.tokens
    thread.context_generation += 1  # a render kept from before no longer holds
    thread.updated_at = now
    Thread.objects.filter(pk=thread.pk).update(
        active_event_count=thread.active_event_count, active_tokens=thread.active_tokens,
        context_generation=thread.context_generation, updated_at=now,
    )


def events_move(
    *, thread: Thread, events: QuerySet[Event], now: datetime, entering: bool,
    limit: int | None = None, **changes: Any,
) -> tuple[int, Moved]:
    """Move `events` into (entering) or out of the working context, setting `changes` on them
    (their new status and link): a clear, un-clear or collapse, done inline or as a job's
    batch (services/operations.py). At most `limit` of them, oldest seq first; None: all of
    them, counted and moved by the database without reading a row. The thread is locked and
    fresh. Returns how many rows moved, and what of them the working context counts."""
    if limit is not None:
        rows = list(events.order_by("seq").values_list("pk", "visible", "token_count")[:limit])
        visible = [tokens for _, shown, tokens in rows if shown]
        moved = Moved(len(visible), sum(visible))
        events = Event.objects.filter(pk__in=[pk for pk, _, _ in rows])
    else:
        moved = Moved.counted(events)
    count = events.update(**changes)
    if entering:
        working_context_changed(thread=thread, now=now, entered=moved)
    else:
        working_context_changed(thread=thread, now=now, left=moved)
    return count, moved


def context_inputs_changed(*, thread: Thread) -> None:
    """Something else a context render reads changed (a block): a render kept from before no
    longer holds. The caller holds the thread's row lock."""
    thread.context_generation += 1
    Thread.objects.filter(pk=thread.pk).update(context_generation=F("context_generation") + 1)


def session_thread_added(*, session_id: int) -> None:
    Session.objects.filter(pk=session_id).update(thread_count=F("thread_count") + 1)


def thread_removed(*, thread: Thread, now: datetime) -> None:
    """A thread is about to be deleted with its rows: take them out of the session's counters.
    (Runs go with the thread.)"""
    events = Event.objects.filter(thread=thread)
    totals = events.aggregate(count=Count("pk"), tokens=Sum("token_count"))
    errors = events.filter(is_error=True).count()
    cost = sum((event_cost(e) for e in events.filter(type="LLMComplete").only("type", "data")),
               Decimal(0))
    Session.objects.filter(pk=thread.session_id).update(
        thread_count=F("thread_count") - 1, event_count=F("event_count") - totals["count"],
        error_count=F("error_count") - errors,
        token_total=F("token_total") - (totals["tokens"] or 0),
        cost_total=F("cost_total") - cost, last_activity_at=now,
    )
    gone = _models_of(events)
    if gone:  # keep the names another thread of the session still reports
        gone -= _models_of(Event.objects.filter(thread__session_id=thread.session_id)
                           .exclude(thread=thread))
        SessionModel.objects.filter(session_id=thread.session_id, model__in=gone).delete()


# --- recount (tests, repair) -------------------------------------------------------------------

THREAD_COUNTERS = ("last_seq", "event_count", "token_total", "active_event_count",
                   "active_tokens", "error_count", "last_event_at")
SESSION_COUNTERS = ("thread_count", "event_count", "error_count", "token_total", "cost_total")
RUN_COUNTERS = ("event_count", "input_tokens", "output_tokens", "cost")


def counters_recount(*, session: Session) -> dict[str, Any]:
    """Every counter of a session, its threads and runs, recomputed from the rows: what the
    stored counters must equal. Reads everything, so it is for tests and repairs only."""
    result: dict[str, Any] = {"threads": {}, "runs": {}, "models": set()}
    session_totals: dict[str, Any] = {k: 0 for k in SESSION_COUNTERS}
    session_totals["cost_total"] = Decimal(0)
    runs: dict[int, dict[str, Any]] = {}
    for thread in Thread.objects.filter(session=session).order_by("pk"):
        session_totals["thread_count"] += 1
        # seq is never reused: retention's deleted rows leave their newest seq behind.
        counts: dict[str, Any] = {"last_seq": thread.expired_seq, "event_count": 0, "token_total": 0,
                                  "active_event_count": 0, "active_tokens": 0, "error_count": 0,
                                  "last_event_at": None}
        for e in Event.objects.filter(thread=thread).iterator(chunk_size=2000):
            counts["last_seq"] = max(counts["last_seq"], e.seq)
            counts["event_count"] += 1
            counts["token_total"] += e.token_count
            # Recomputed from the row's own fields, not its stored flag: the flag must follow them.
            failed = event_failed(e.type, e.role, e.content, e.parts, e.data)
            counts["error_count"] += failed
            if e.visible and e.status == Event.Status.ACTIVE:
                counts["active_event_count"] += 1
                counts["active_tokens"] += e.token_count
            if counts["last_event_at"] is None or e.created_at > counts["last_event_at"]:
                counts["last_event_at"] = e.created_at
            session_totals["event_count"] += 1
            session_totals["token_total"] += e.token_count
            session_totals["error_count"] += failed
            session_totals["cost_total"] += event_cost(e)
            if (name := model_of(e)) is not None:
                result["models"].add(name)
            if e.run_id is not None:
                run = runs.setdefault(e.run_id, {"event_count": 0, "input_tokens": 0,
                                                 "output_tokens": 0, "cost": Decimal(0)})
                run["event_count"] += 1
                used_in, used_out = event_usage(e)
                run["input_tokens"] += used_in
                run["output_tokens"] += used_out
                run["cost"] += event_cost(e)
        result["threads"][thread.pk] = counts
        for stored in Run.objects.filter(thread=thread):
            result["runs"][stored.pk] = runs.get(stored.pk, {"event_count": 0, "input_tokens": 0,
                                                       "output_tokens": 0, "cost": Decimal(0)})
    result["session"] = session_totals
    return result


def counters_stored(*, session: Session) -> dict[str, Any]:
    """The stored counters, in the shape of counters_recount."""
    session = Session.objects.get(pk=session.pk)
    return {
        "threads": {t["pk"]: {k: t[k] for k in THREAD_COUNTERS}
                    for t in Thread.objects.filter(session=session).order_by("pk")
                    .values("pk", *THREAD_COUNTERS)},
        "runs": {r["pk"]: {k: r[k] for k in RUN_COUNTERS}
                 for r in Run.objects.filter(thread__session=session).values("pk", *RUN_COUNTERS)},
        "session": {k: getattr(session, k) for k in SESSION_COUNTERS},
        "models": set(SessionModel.objects.filter(session=session).values_list("model", flat=True)),
    }
