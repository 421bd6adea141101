"""WAL and storage per event on PostgreSQL, the inputs of docs/scaling.md's capacity model.

Appends events of varied text through the services layer (as the API's append does, audit row
and counters included), single events and batches of 100, in turns, and reads
`pg_current_wal_lsn()` before and after each round: the WAL a primary writes (and ships to
every replica and archive) per event. Then the search index's worker indexes what the appends
queued, measured the same way. Storage per event is the growth of the `contextstore_*`
relations (heap, TOAST, indexes) over the whole run. Full-page images are included as they
fall (the first change to a page after a checkpoint); a run starts with CHECKPOINT so each
round pays them as a steady state would, once per page per checkpoint interval.

    DATABASE_URL=postgres://... python manage.py bench_wal [--events 1000] [--rounds 3]

Data lives in a workspace `bench-wal`, deleted at the end.
"""

import random
import statistics

from django.core.management.base import CommandError, OutputWrapper
from django.db import DatabaseError, connection, transaction

from contextstore.models import Session
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.search import search_index_pending
from contextstore.services.sessions import session_delete, session_ensure, thread_ensure
from contextstore.services.workspaces import workspace_ensure

WORDS = ("replica export retry backoff jitter staging nightly primary lagged attempts policy "
         "verify tokens budget summary invoice customer refund shipment order tracking status "
         "latency timeout gateway upstream config deploy rollback cluster shard index vacuum "
         "checkpoint archive bucket region quota limit throttle cache worker queue broker").split()


def message(rng: random.Random, i: int, chars: int) -> dict:
    """A chat message of about `chars` characters of varied words (distinct trigrams, as real
    text has: repeated bench text would flatter the search index)."""
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS) + (str(rng.randrange(1000)) if rng.random() < 0.2 else "")
        words.append(word)
        size += len(word) + 1
    return {"type": "Message", "role": "user" if i % 2 else "assistant",
            "content": " ".join(words)[:chars]}


def wal_lsn() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        return cursor.fetchone()[0]


class Wal:
    """WAL written between two points. With pg_walinspect (PostgreSQL 15's contrib, created
    here when the role may), only this database's records count, and the commit records of the
    transactions that wrote them: other databases on the cluster write WAL at the same time.
    Without it, the whole cluster's WAL between the two LSNs."""

    def __init__(self) -> None:
        self.inspect, self.why = False, "no pg_walinspect"
        with connection.cursor() as cursor:
            try:
                with transaction.atomic():
                    cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
                self.inspect = True
            except DatabaseError:
                pass
            cursor.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
            self.database = f"%/{cursor.fetchone()[0]}/%"
        self.fpi = 0
        self.total = 0
        self.last_fpi = 0

    def since(self, start: str) -> int:
        with connection.cursor() as cursor:
            if self.inspect:
                try:
                    with transaction.atomic():
                        cursor.execute(
                            "WITH r AS (SELECT * FROM pg_get_wal_records_info("
                            "           %s::pg_lsn, pg_current_wal_flush_lsn())), "
                            "ours AS (SELECT DISTINCT xid::text AS xid FROM r "
                            "         WHERE xid::text <> '0' AND block_ref LIKE %s) "
                            "SELECT coalesce(sum(record_length), 0), coalesce(sum(fpi_length), 0) "
                            "FROM r WHERE block_ref LIKE %s OR xid::text IN (SELECT xid FROM ours)",
                            [start, self.database, self.database])
                        total, fpi = cursor.fetchone()
                except DatabaseError as error:
                    # A checkpoint recycled the segment (more WAL than max_wal_size): from here
                    # on, the whole cluster's WAL.
                    self.inspect, self.why = False, str(error).splitlines()[0]
            if not self.inspect:
                cursor.execute("SELECT pg_current_wal_lsn() - %s::pg_lsn, 0", [start])
                total, fpi = cursor.fetchone()
        self.fpi += int(fpi)
        self.last_fpi = int(fpi)
        self.total += int(total)
        return int(total)


def relations_bytes() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                       "JOIN pg_namespace n ON n.oid = c.relnamespace "
                       "WHERE c.relkind = 'r' AND n.nspname = current_schema() "
                       "AND c.relname LIKE 'contextstore\\_%'")
        return int(cursor.fetchone()[0])


class WalBench:
    """bench_wal's measurements, written to `stdout` (the command's)."""

    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout

    def run(self, *, events: int, rounds: int, chars: int) -> dict[str, float]:
        if connection.vendor != "postgresql":
            raise CommandError("bench_wal measures PostgreSQL's WAL: set DATABASE_URL=postgres://…")
        actor = Actor.system("bench_wal")
        workspace, _ = workspace_ensure(slug="bench-wal")
        for old in Session.objects.filter(workspace=workspace):
            session_delete(session=old, actor=actor)
        search_index_pending()  # nothing of anyone else's queued counts as ours
        rng = random.Random(33)
        session, _ = session_ensure(workspace=workspace, key="wal", actor=actor)
        single_thread, _ = thread_ensure(session=session, name="single", actor=actor)
        batch_thread, _ = thread_ensure(session=session, name="batch", actor=actor)
        wal = Wal()
        with connection.cursor() as cursor:
            cursor.execute("CHECKPOINT")
        size_before = relations_bytes()
        single: list[float] = []
        batched: list[float] = []
        indexed: list[float] = []
        content = 0
        fpi = {"single": 0, "batch": 0, "index": 0}
        per_round = max(events // 100, 1) * 100
        for _ in range(rounds):
            singles = [message(rng, i, chars) for i in range(per_round)]
            batches = [message(rng, i, chars) for i in range(per_round)]
            content += sum(len(e["content"]) for e in singles + batches)
            start = wal_lsn()
            for spec in singles:
                event_append(thread=single_thread, events=[spec], actor=actor)
            single.append(wal.since(start) / per_round)
            fpi["single"] += wal.last_fpi
            start = wal_lsn()
            for k in range(0, per_round, 100):
                event_append(thread=batch_thread, events=batches[k:k + 100], actor=actor)
            batched.append(wal.since(start) / per_round)
            fpi["batch"] += wal.last_fpi
            start = wal_lsn()
            search_index_pending()
            indexed.append(wal.since(start) / (2 * per_round))
            fpi["index"] += wal.last_fpi
        stored = relations_bytes() - size_before
        total = 2 * per_round * rounds
        figures = {
            "single": statistics.median(single),
            "batch": statistics.median(batched),
            "index": statistics.median(indexed),
            "storage": stored / total,
            "content": content / total,
            "fpi": wal.fpi / max(wal.total, 1),
        }
        version = getattr(connection, "pg_version", 0) // 10000  # the PostgreSQL backend's
        self.stdout.write(f"PostgreSQL {version}; {rounds} rounds of "
                          f"{per_round} single appends and {per_round // 100} batches of 100, "
                          f"messages of {figures['content']:.0f} characters of varied words")
        self.stdout.write("WAL counted: " + ("this database's records and their transactions' "
                          f"commits (pg_walinspect); full-page images {figures['fpi']:.0%} of it"
                          if wal.inspect else f"the whole cluster's ({wal.why})"))
        for label, key, rounds_, events in (("single-event appends", "single", single, per_round),
                                            ("batches of 100", "batch", batched, per_round),
                                            ("search index worker", "index", indexed, 2 * per_round)):
            self.stdout.write(f"WAL per event, {label + ':':<25}{figures[key]:>7,.0f} bytes "
                              f"(rounds: {', '.join(f'{x:,.0f}' for x in rounds_)}; "
                              f"full-page images {fpi[key] / (sum(rounds_) * events):.0%})")
        self.stdout.write(f"storage per event (all contextstore tables, indexes, TOAST): "
                          f"{figures['storage']:,.0f} bytes, "
                          f"{figures['storage'] / figures['content']:.2f} per content byte")
        session_delete(session=session, actor=actor)
        search_index_pending()
        return figures
