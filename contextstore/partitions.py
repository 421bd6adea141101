"""The event table hash-partitioned by thread on PostgreSQL (EVENT_PARTITIONS; docs/scaling.md,
"Partitioning the event table"): `move_events` rebuilds contextstore_event with N partitions
(or back to one plain table) while the service keeps writing.

1. prepare, one short transaction: a new table LIKE the old one (columns, defaults, NOT NULL
   and CHECK constraints, its own identity sequence), its partitions, its primary key (id,
   thread_id) — a key of a partitioned table must hold the partition key — every unique
   constraint and index of the old table under a temporary name, its foreign keys to other
   tables; and a row trigger on the old table that mirrors every INSERT, UPDATE and DELETE
   into the new one from then on.
2. copy, by id ranges of `batch` ids, each its own transaction: INSERT … SELECT … FOR SHARE ON
   CONFLICT DO NOTHING. FOR SHARE waits for a writer that holds a row and reads its last
   version; a row the trigger already mirrored is skipped.
3. swap, one short transaction under the old table's ACCESS EXCLUSIVE lock (taken with a
   lock_timeout, retried): the trigger dropped, the new identity sequence moved past the old
   one, the search triggers (migrations/0001_initial.py) and the foreign keys that point at events moved
   over, then every name (table, indexes, sequence) swapped. Statements waiting on the lock
   run against the new table once it is released: PostgreSQL resolves the name again.
4. after: the moved foreign keys validated (NOT VALID above: no scan under the lock), ANALYZE,
   the old table dropped (kept with keep_old, as contextstore_event_old). Each step that takes
   locks runs with a lock_timeout and again after a timeout or a deadlock with a writer.

Foreign keys that point at an event by id alone cannot point at a partitioned table, whose id
is unique only with thread_id. contextstore_collapse's summary event points at (thread_id, id).
contextstore_eventsearch keeps none: a statement trigger on the partitioned table (FORGET)
deletes the indexed text of deleted events, as the initial migration's ON DELETE CASCADE does, without a check
through the partitions for every indexed event. Memory.source_event (no thread) and
Event.replaced_by (PostgreSQL cannot add a partitioned table's foreign key NOT VALID, and
validating it would scan the table under the lock) keep no constraint in the database:
Django's SET_NULL nulls them on an ORM delete, and services/retention.py's
events_delete_locked, the one raw delete, settles them first.
"""

import functools
import os
import re
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection, transaction
from django.db.utils import OperationalError

TABLE = "contextstore_event"
NEW = "contextstore_event_new"
OLD = "contextstore_event_old"
MIRROR = "contextstore_event_mirror"
# Foreign keys into the event table: (table, column, name, composite when partitioned, action).
# Composite: the table's thread_id is its event's, so it can point at (thread_id, id).
INCOMING = (
    # partitioned: FORGET below instead (a foreign key into a partitioned table costs each
    # indexed event a check through the partitions, a fifth of the search index's work)
    ("contextstore_eventsearch", "event_id", "eventsearch_event_fk", False, "ON DELETE CASCADE"),
    # partitioned: FORGET too (the analytics' figures of calls and errors)
    ("contextstore_callfigure", "event_id", "contextstore_callfigure_event_fk", False, "ON DELETE CASCADE"),
    ("contextstore_collapse", "summary_event_id", "contextstore_collapse_summary_event_fk", True,
     "DEFERRABLE INITIALLY DEFERRED"),
    ("contextstore_memory", "source_event_id", "contextstore_memory_source_event_fk", False,
     "DEFERRABLE INITIALLY DEFERRED"),
    ("contextstore_event", "replaced_by_id", "contextstore_event_replaced_by_fk", False,
     "DEFERRABLE INITIALLY DEFERRED"),
)
# A partitioned table's deleted events take their indexed text with them (the cascade's work).
FORGET = (
    "CREATE OR REPLACE FUNCTION contextstore_event_search_forget() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ BEGIN DELETE FROM contextstore_eventsearch s USING old_events o "
    "WHERE s.event_id = o.id; DELETE FROM contextstore_callfigure f USING old_events o "
    "WHERE f.event_id = o.id; DELETE FROM contextstore_callcacheverdict v USING old_events o "
    "WHERE v.call_id = o.id; UPDATE contextstore_callcacheverdict v SET previous_id = NULL "
    "FROM old_events o WHERE v.previous_id = o.id; RETURN NULL; END $$",
    f"CREATE TRIGGER event_search_delete AFTER DELETE ON {NEW} REFERENCING OLD TABLE AS old_events "
    "FOR EACH STATEMENT EXECUTE FUNCTION contextstore_event_search_forget()",
)
Log = Callable[[str], None]
# The longest the swap waits for each of its two lock statements (see _swap).
SWAP_LOCK_WAIT_MS = 400
_ON_TABLE = re.compile(rf" ON (ONLY )?(public\.)?{TABLE} ")


def partition_count(table: str = TABLE) -> int:
    """How many hash partitions the table has; 1 for a plain table."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE oid = %s::regclass", [table])
        if cursor.fetchone()[0] != "p":
            return 1
        cursor.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = %s::regclass", [table])
        return int(cursor.fetchone()[0])


def _rows(sql: str, params: list | None = None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return cursor.fetchall()


def _run(*statements: str) -> None:
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)


def abort() -> None:
    """Undo an interrupted move (before its swap): the mirror trigger and the new table go."""
    with transaction.atomic():
        _run(f"DROP TRIGGER IF EXISTS {MIRROR} ON {TABLE}", f"DROP TABLE IF EXISTS {NEW}",
             f"DROP FUNCTION IF EXISTS {MIRROR}()")


def _prepare(partitions: int) -> list[tuple[str, str]]:
    """Step 1; returns (temporary name, final name) of each index of the new table."""
    renames = []
    with transaction.atomic():
        like = "INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY INCLUDING STORAGE"
        by = " PARTITION BY HASH (thread_id)" if partitions > 1 else ""
        _run(f"CREATE TABLE {NEW} (LIKE {TABLE} {like}){by}")
        for i in range(partitions if partitions > 1 else 0):
            _run(f"CREATE TABLE {TABLE}_h{partitions}_{i} PARTITION OF {NEW} "
                 f"FOR VALUES WITH (MODULUS {partitions}, REMAINDER {i})")
        key = "id, thread_id" if partitions > 1 else "id"
        indexes = _rows(
            "SELECT i.relname, pg_get_indexdef(x.indexrelid), c.contype, "
            "pg_get_constraintdef(c.oid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "LEFT JOIN pg_constraint c ON c.conindid = x.indexrelid AND c.conrelid = x.indrelid "
            "AND c.contype IN ('p', 'u') "
            "WHERE x.indrelid = %s::regclass ORDER BY 1", [TABLE])
        for n, (name, definition, contype, constraint) in enumerate(indexes):
            temporary = f"{NEW}_{n}"
            renames.append((temporary, name))
            if contype == "p":
                _run(f"ALTER TABLE {NEW} ADD CONSTRAINT {temporary} PRIMARY KEY ({key})")
            elif contype == "u":
                _run(f"ALTER TABLE {NEW} ADD CONSTRAINT {temporary} {constraint}")
            else:
                head, _, rest = definition.partition(" ON ")
                rest = _ON_TABLE.sub("", f" ON {rest}", count=1)  # the (qualified) table name
                _run(f"{head.rsplit(' ', 1)[0]} {temporary} ON {NEW} {rest}")
        outgoing = _rows("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                         "WHERE conrelid = %s::regclass AND contype = 'f' AND confrelid <> conrelid",
                         [TABLE])
        for name, definition in outgoing:
            _run(f"ALTER TABLE {NEW} ADD CONSTRAINT {name} {definition}")
        _run(f"CREATE FUNCTION {MIRROR}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
             f"IF TG_OP <> 'INSERT' THEN "
             f"DELETE FROM {NEW} WHERE id = OLD.id AND thread_id = OLD.thread_id; END IF; "
             f"IF TG_OP <> 'DELETE' THEN INSERT INTO {NEW} VALUES (NEW.*); END IF; "
             f"RETURN NULL; END $$",
             f"CREATE TRIGGER {MIRROR} AFTER INSERT OR UPDATE OR DELETE ON {TABLE} "
             f"FOR EACH ROW EXECUTE FUNCTION {MIRROR}()")
    return renames


def _copy(batch: int, log: Log, between: Callable[[], None] | None) -> int:
    """Step 2: the rows written before the trigger, by id ranges; returns how many were copied."""
    low, high = _rows(f"SELECT min(id), max(id) FROM {TABLE}")[0]
    copied = 0
    if low is None:
        return 0
    for start in range(low, high + 1, batch):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {NEW} SELECT * FROM {TABLE} WHERE id BETWEEN %s AND %s "
                           f"FOR SHARE ON CONFLICT DO NOTHING", [start, start + batch - 1])
            copied += cursor.rowcount
        log(f"copied ids {start}–{min(start + batch - 1, high)} of {high}")
        if between is not None:
            between()
    return copied


def _swap(partitions: int, renames: list[tuple[str, str]], lock_timeout_ms: int) -> list[str]:
    """Step 3; returns the foreign keys added NOT VALID, to validate after."""
    pending = []
    with transaction.atomic():
        # Every lock the swap needs, taken first and each wait cut short well before a
        # writer's deadlock check (deadlock_timeout, 1 s by default): a writer that waits on
        # the swap while holding a table the swap wants (indexing takes the search table, then
        # the event table's key share) finds the swap gone, not itself chosen as the victim;
        # the swap is retried whole.
        incoming = sorted({table for table, *_ in INCOMING if table != TABLE})
        _run(f"SET LOCAL lock_timeout = {int(lock_timeout_ms)}",
             f"SET LOCAL statement_timeout = {min(int(lock_timeout_ms), SWAP_LOCK_WAIT_MS)}",
             f"LOCK TABLE {', '.join(incoming)} IN SHARE ROW EXCLUSIVE MODE",
             f"LOCK TABLE {TABLE}, {NEW} IN ACCESS EXCLUSIVE MODE",
             "SET LOCAL statement_timeout TO DEFAULT",
             f"DROP TRIGGER {MIRROR} ON {TABLE}", f"DROP FUNCTION {MIRROR}()")
        old_seq, new_seq = (_rows("SELECT pg_get_serial_sequence(%s, 'id')", [t])[0][0]
                            for t in (TABLE, NEW))
        _rows(f"SELECT setval(%s, greatest(nextval(%s), (SELECT coalesce(max(id), 0) + 1 "
              f"FROM {NEW})), false)", [new_seq, old_seq])
        # The foreign keys that point at the old table, and its triggers (the search queue's).
        names = dict(_rows("SELECT conrelid::regclass::text, conname FROM pg_constraint "
                           "WHERE confrelid = %s::regclass AND contype = 'f' AND conparentid = 0",
                           [TABLE]))
        for table, name in names.items():
            _run(f"ALTER TABLE {table} DROP CONSTRAINT {name}")
        for table, column, default_name, composite, action in INCOMING:
            name = names.get(table, default_name)  # the same name when there was one
            table = NEW if table == TABLE else table
            if partitions <= 1:
                _run(f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY ({column}) "
                     f"REFERENCES {NEW} (id) {action} NOT VALID")
            elif composite:
                _run(f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY (thread_id, {column}) "
                     f"REFERENCES {NEW} (thread_id, id) {action} NOT VALID")
            else:
                continue
            pending.append(f"ALTER TABLE {TABLE if table == NEW else table} VALIDATE CONSTRAINT {name}")
        triggers = _rows("SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger "
                         "WHERE tgrelid = %s::regclass AND NOT tgisinternal AND tgparentid = 0",
                         [TABLE])
        for name, definition in triggers:
            _run(f"DROP TRIGGER {name} ON {TABLE}")
            if name != "event_search_delete":
                _run(_ON_TABLE.sub(f" ON {NEW} ", definition, count=1))
        _run(*FORGET if partitions > 1 else ["DROP FUNCTION IF EXISTS contextstore_event_search_forget()"])
        # Names: the old table's step aside, the new table's take them.
        for n, (temporary, name) in enumerate(renames):
            _run(f"ALTER INDEX {name} RENAME TO {OLD}_{n}", f"ALTER INDEX {temporary} RENAME TO {name}")
        _run(f"ALTER SEQUENCE {old_seq} RENAME TO {OLD}_id_seq",
             f"ALTER SEQUENCE {new_seq} RENAME TO {TABLE}_id_seq",
             f"ALTER TABLE {TABLE} RENAME TO {OLD}", f"ALTER TABLE {NEW} RENAME TO {TABLE}")
    return pending


def move_events(partitions: int, *, batch: int = 10_000, keep_old: bool = False,
                lock_timeout_ms: int = 2000, attempts: int = 10, log: Log = lambda _: None,
                between: Callable[[], None] | None = None) -> int:
    """Rebuild the event table with `partitions` hash partitions (0 or 1: one plain table),
    online; returns how many rows the copy moved (the trigger moved the rest). `between` runs
    after each copied batch (tests). PostgreSQL only."""
    partitions = max(partitions, 1)
    if connection.vendor != "postgresql":
        raise RuntimeError("partitioning needs PostgreSQL")
    if not connection.get_autocommit():
        raise RuntimeError("move_events commits as it goes: call it outside a transaction")
    if _rows("SELECT to_regclass(%s), to_regclass(%s)", [NEW, OLD])[0] != (None, None):
        raise RuntimeError(f"{NEW} or {OLD} exists: an earlier move was interrupted "
                           f"(partition_events --abort) or kept its old table (drop {OLD})")
    if partition_count() == partitions:
        log(f"{TABLE} has {partitions} partition(s) already")
        return 0
    renames = _prepare(partitions)
    log(f"{NEW}: {partitions} partition(s), mirror trigger on {TABLE}")
    copied = _copy(batch, log, between)
    pending = _retried(lambda: _swap(partitions, renames, lock_timeout_ms), attempts, log, "swap")
    log(f"swapped: {TABLE} has {partitions} partition(s)")
    for sql in pending:
        _retried(functools.partial(_locked, lock_timeout_ms, sql), attempts, log, "validate")
    _run(f"ANALYZE {TABLE}")
    if not keep_old:  # its foreign keys lock threads, runs, collapses and clears: briefly, retried
        _retried(functools.partial(_locked, lock_timeout_ms, f"DROP TABLE {OLD}"), attempts, log, "drop")
    return copied


def _locked(lock_timeout_ms: int, *statements: str) -> list[str]:
    with transaction.atomic():
        _run(f"SET LOCAL lock_timeout = {int(lock_timeout_ms)}", *statements)
    return []


def _retried(step: Callable[[], list[str]], attempts: int, log: Log, name: str) -> list[str]:
    """A step that takes locks, again after a lock timeout or a deadlock with a writer (both
    roll it back whole): a long transaction delays it instead of queueing appends behind it."""
    for attempt in range(attempts):
        try:
            return step()
        except OperationalError as error:
            if attempt == attempts - 1:
                raise
            log(f"{name}: {str(error).splitlines()[0]}; again")
            time.sleep(0.5)
    return []


def bench_schema(partitions: int | None, log: Log) -> None:
    """The bench commands' --partitions: the event table moved to that many partitions first
    (None: as it is), and EVENT_PARTITIONS set to match here and in the servers it starts
    (the queries that name the thread for pruning read it). Says what the benchmark runs against."""
    if partitions is not None and connection.vendor == "postgresql":
        move_events(partitions, log=log)
        settings.EVENT_PARTITIONS = partitions
        os.environ["EVENT_PARTITIONS"] = str(partitions)
    if connection.vendor == "postgresql":
        log(f"contextstore_event: {partition_count()} partition(s)")
