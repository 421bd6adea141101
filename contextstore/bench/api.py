"""Load test of the agent API over HTTP on loopback.

    python manage.py bench_api                      # starts gunicorn on this database
    python manage.py bench_api --url http://127.0.0.1:8000 --token cs_...

Prints every figure of the hot-path targets next to its target and the /healthz floor measured
in the same run: batch-append throughput (100 events per request, 1 and 4 clients), single-event
appends/s with 8 clients, the in-process append, p50 of a single append, GET thread, GET state and
GET context (8k budget, with and without a render record, and right after an append: an agent's
turn, which a render kept from the last one serves by reading only the new event) on threads of
1k and 100k events and their ratios, context to the /healthz floor, a rare-word search over the
big thread right after its bulk load (no ANALYZE) and the search index's catching up before it,
the event table's storage per content byte (search index included), and the COPY floor: COPY
into the event table's schema (its indexes and triggers) against a bare table with only the
(thread, seq) key, and batch ingest against that COPY; under load, the CPU time per request of
the server, the database and the benchmark's clients (where they run here). Without --url it
starts gunicorn with the production config (project/gunicorn.py) against the configured
database, with throttling off, and stops it after.
"""

import functools
import os
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import urllib3
from django.conf import settings
from django.core.management.base import CommandError, OutputWrapper
from django.db import DatabaseError, connection, transaction
from django.test import Client, override_settings

from contextstore.bench.over_http import (
    Http,
    batch_body,
    bench_token,
    fill,
    load,
    message,
    ok,
    p50,
    p50_each,
    percentile,
    start_server,
)
from contextstore.middleware import SqlClock
from contextstore.models import Thread
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.search import search_index_pending
from contextstore.services.sessions import thread_ensure_by_key
from contextstore.services.workspaces import workspace_ensure


def cpu_snapshot() -> Counter[Any]:
    """CPU seconds used so far by this machine's API server (gunicorn), database (postgres) and
    this benchmark, by kind and by (kind, pid), and by the machine as a whole (busy time of every
    CPU). Linux's /proc: empty elsewhere; a server or database on another machine counts
    nothing."""
    used: Counter[Any] = Counter()
    proc = Path("/proc")
    if not (proc / "stat").exists():
        return used
    tick = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal
    times = [int(v) for v in (proc / "stat").read_text().split("\n", 1)[0].split()[1:9]]
    # Counter holds any number; typeshed says int
    used["machine"] = (sum(times) - times[3] - times[4]) / tick  # type: ignore[assignment]
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat, command = (entry / "stat").read_text(), (entry / "cmdline").read_bytes()
        except OSError:  # exited meanwhile
            continue
        kind = ("client" if entry.name == str(os.getpid()) else "server" if b"gunicorn" in command
                else "database" if command.startswith(b"postgres") else None)
        if kind:
            user, system = stat[stat.rindex(")") + 2:].split()[11:13]  # utime, stime
            seconds = (int(user) + int(system)) / tick
            used[kind] += seconds  # type: ignore[assignment]  # as above
            used[kind, entry.name] = seconds  # type: ignore[assignment]
    return used


def cpu_between(before: Counter[Any], after: Counter[Any]) -> Counter[str]:
    """CPU seconds each kind used between two snapshots, from the processes alive at the second
    (one that exited meanwhile, an autovacuum worker say, would count as negative time)."""
    used: Counter[str] = Counter(machine=after["machine"] - before["machine"])
    for key, seconds in after.items():
        if isinstance(key, tuple):
            used[key[0]] += seconds - before.get(key, 0)
    return used


def for_seconds(clients: int, seconds: float, work: Callable[[int, Callable[[], bool]], None]) -> float:
    """Run work(index, going) in `clients` threads at once; the seconds they ran. Each prepares
    what it needs, then loops while going(): its first call waits until every thread is ready
    and the clock starts, and it turns false `seconds` after that."""
    start = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def worker(index: int) -> None:
        waited = [False]

        def going() -> bool:
            if not waited[0]:
                start.wait()
                waited[0] = True
            return time.perf_counter() < stop_at[0]

        work(index, going)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for w in workers:
        w.start()
    began = time.perf_counter()
    stop_at[0] = began + seconds
    start.wait()
    for w in workers:
        w.join()
    return time.perf_counter() - began


COPY_ROWS = 20_000
COPY_COLUMNS = ("thread_id", "seq", "position", "type", "role", "content", "parts", "data",
                "call_id", "step", "anchor", "payload_hash", "token_count", "thinking_tokens",
                "visible", "is_error", "status", "occurred_at", "created_at")


def copy_rows(rows: int) -> bytes:
    """COPY text of `rows` events of about 60 words each, drawn from 3,000 made-up words (a
    text index pays per distinct trigram: a repeated word would flatter it), in one thread."""
    pick = random.Random(7)
    syllables = ["ka", "lo", "mer", "in", "tra", "de", "sun", "ob", "qui", "re", "vel", "ash",
                 "pon", "ti", "gru", "el", "zo", "mac", "nu", "fer"]
    vocabulary = ["".join(pick.choices(syllables, k=pick.randint(1, 4))) for _ in range(3000)]

    def words(n: int) -> str:
        return " ".join(pick.choices(vocabulary, k=n))

    lines = []
    for i in range(1, rows + 1):
        data = (f'{{"name": "search", "arguments": {{"query": "{words(5)}"}}, '
                f'"result": "{words(20)}"}}' if i % 3 == 0 else "\\N")
        parts = f'[{{"type": "text", "text": "{words(15)}"}}]' if i % 10 == 0 else "\\N"
        lines.append("\t".join([
            "1", str(i), str(i), "Message", "user", words(60), parts, data, "", "", "", "", "80",
            "0", "t", "f", "active", "2026-01-01 00:00:00+00", "2026-01-01 00:00:00+00"]))
    return ("\n".join(lines) + "\n").encode()


class AppendTransaction:
    """The single append's floor (PostgreSQL): the transaction an append is, issued directly by
    psycopg on a connection of its own — lock the thread row, insert one event (with a
    client_id, so its unique index is kept as ours is), update the thread's counters. The
    thread is a real one of the run; its seq goes on from there."""

    INSERT = ("INSERT INTO contextstore_event (thread_id, seq, position, type, role, content, call_id, "
              "step, anchor, client_id, payload_hash, token_count, thinking_tokens, visible, is_error, "
              "status, occurred_at, created_at) VALUES (%s, %s, %s, 'Message', 'user', %s, '', '', '', "
              "%s, '', 80, 0, true, false, 'active', now(), now())")

    def __init__(self, thread_id: int) -> None:
        self.thread_id = thread_id
        self.conn = psycopg.connect(**connection.get_connection_params())

    def __call__(self) -> None:
        with self.conn.transaction():
            (seq,) = self.conn.execute("SELECT last_seq + 1 FROM contextstore_thread WHERE id = %s "
                                       "FOR NO KEY UPDATE", [self.thread_id]).fetchone()  # type: ignore[misc]
            self.conn.execute(self.INSERT, [self.thread_id, seq, seq, message(seq, "")["content"],
                                            f"floor-{uuid.uuid4().hex}"])
            self.conn.execute("UPDATE contextstore_thread SET last_seq = %s, event_count = event_count + 1, "
                              "last_event_at = now(), updated_at = now() WHERE id = %s",
                              [seq, self.thread_id])

    def close(self) -> None:
        self.conn.close()


class ApiBench:
    """bench_api's measurements, written to `stdout` (the command's)."""

    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout

    def run(self, *, url: str | None, token: str | None, workers: int | None, seconds: float,
            large: int, samples: int) -> None:
        server = None
        if token is None:
            token = bench_token("bench_api")
        if url is None:
            server, url = start_server(self.stdout, workers)
        try:
            self.measure(url.rstrip("/"), token, seconds, large, samples)
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)

    # -- measurements

    def measure(self, url: str, token: str, seconds: float, large: int, samples: int) -> None:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        run_tag = uuid.uuid4().hex[:8]
        figures: list[tuple[str, float, str, bool]] = []

        def client() -> Http:
            return Http(f"{url}/api/v1/", headers)

        def new_thread(http: Http, name: str, session: str = "") -> int:
            return ok(http.post("threads/ensure/", {
                "session_key": f"bench-{run_tag}{session}", "name": name})).json()["id"]

        def figure(name: str, value: float, unit: str, target: float | None, le: bool = True) -> None:
            met = target is None or (value <= target if le else value >= target)
            goal = "" if target is None else f"{'<=' if le else '>='} {target:,.{2 if target < 1 else 1}f}"
            figures.append((name, value, f"{unit:<9} target {goal}" if goal else unit, met))
            mark = "" if target is None else ("  ok" if met else "  MISSED")
            self.stdout.write(f"{name:<52} {value:>10,.2f} {unit:<9} {goal}{mark}")

        # The figures depend on the machine and what else runs on it: say so with them.
        self.stdout.write(f"server {url}, database {settings.DATABASES['default']['ENGINE']}, "
                          f"{os.cpu_count()} CPUs, load average {load()}")
        with client() as http:
            with Http(url, timeout=30) as plain:
                floor = p50(lambda: plain.get("/healthz"), samples)
            figure("GET /healthz p50 (the floor)", floor, "ms", None)
            # The service's own cost first, on a quiet machine: after the load below, the
            # database and the kernel go on writing what it stored for seconds.
            figure("single-event append in-process p50", self.in_process_append(samples),
                   "ms", None)
            figure("durable empty commit p50 (the WAL flush floor)", self.commit_floor(samples),
                   "ms", None)
            copy_rates = self.copy_floor(COPY_ROWS)
            if copy_rates:
                figure("COPY into a bare table (the floor)", copy_rates[0], "rows/s", None)
                figure("COPY into the event table's schema", copy_rates[1], "rows/s", None)
                figure("  event schema / bare table", copy_rates[1] / copy_rates[0], "x", 0.25,
                       le=False)
            rate = self.batch_appends(client, new_thread, http, 1, seconds, run_tag)
            figure("batch appends (100/request), 1 client", rate, "events/s", None)
            # Where the CPU goes under load: on a machine that runs server, database and clients,
            # these throughputs end where its CPUs are all busy.
            before = time.perf_counter(), cpu_snapshot()
            rate = self.batch_appends(client, new_thread, http, 4, seconds, run_tag)
            figure("batch appends (100/request), 4 clients", rate, "events/s", None)
            if copy_rates:
                figure("  batch appends, 4 clients / COPY into the schema", rate / copy_rates[1],
                       "x", 0.5, le=False)
            self.cpu_used(before, rate / 100, "batch", events=100)
            floor_rate = self.transactions(new_thread, http, 8, seconds)
            if floor_rate:
                figure("append transactions by psycopg, 8 clients (the floor)", floor_rate, "txn/s", None)
            before = time.perf_counter(), cpu_snapshot()
            rate = self.single_appends(client, new_thread, http, 8, seconds, run_tag, False)
            figure("single-event appends, 8 clients, 8 sessions", rate, "appends/s", None)
            self.cpu_used(before, rate, "append")
            if floor_rate:
                figure("  single appends, 8 clients / psycopg's", rate / floor_rate, "x", 0.5, le=False)
            # Threads of one session share its counters' row: their commits queue on its lock.
            rate = self.single_appends(client, new_thread, http, 8, seconds, run_tag, True)
            figure("single-event appends, 8 clients, 1 session", rate, "appends/s", None)

            # Both threads are measured turn about, request by request, with the floor beside
            # them: the machine is shared, and its load drifts during a run.
            sizes = (1000, large)
            bases = {}
            for index, size in enumerate(sizes):
                thread_id = new_thread(http, f"context-{index}-{size}")
                fill(self.stdout, http, thread_id, size, run_tag)
                bases[size] = f"threads/{thread_id}/"
            self.index_search()
            self.settle()
            n = [0]

            def append_one(base: str) -> urllib3.BaseHTTPResponse:
                n[0] += 1
                return http.post(f"{base}events/", {"events": [message(n[0], f"{run_tag}-one")]})

            calls: dict[str, Callable[[str], urllib3.BaseHTTPResponse]] = {
                "append": append_one,
                "thread": lambda base: http.get(base),
                "state": lambda base: http.get(f"{base}state/"),
                "context": lambda base: http.get(f"{base}context/?max_tokens=8000"),
                "context_record": lambda base: http.get(
                    f"{base}context/?max_tokens=8000&record=true"),
                # the agent's turn: an event appended, then the context asked for again
                "append_again": append_one,
                "context_appended": lambda base: http.get(f"{base}context/?max_tokens=8000"),
            }
            per_size: dict[int, dict[str, float]] = {size: {} for size in sizes}
            # the append's floor, timed in the same turns as it: /healthz + psycopg's transaction
            txn = (AppendTransaction(new_thread(http, "floor-transaction"))
                   if connection.vendor == "postgresql" else None)
            with Http(url, timeout=30) as plain:
                floors: dict[str, float] = {}
                # a render and a recorded one in the same turns: their ratio is the record's cost
                for keys in (["append"], ["thread"], ["state"], ["context", "context_record"],
                             ["append_again", "context_appended"]):
                    pairs = [(key, size) for key in keys for size in sizes]
                    extra: list[Callable[[], Any]] = [txn] if txn and keys == ["append"] else []
                    timed: list[Callable[[], Any]] = [lambda: plain.get("/healthz"), *extra]
                    timed += [functools.partial(calls[key], bases[size]) for key, size in pairs]
                    got = p50_each(timed, samples)
                    floors[keys[0]] = got[0]
                    if extra:
                        txn_p50 = got[1]
                    for (key, size), value in zip(pairs, got[1 + len(extra):], strict=True):
                        per_size[size][key] = value
            if txn:
                txn.close()
            floor = percentile(list(floors.values()), 0.5)
            figure("GET /healthz p50 during the reads", floor, "ms", None)
            if txn:
                figure("append transaction by psycopg p50 (the floor)", txn_p50, "ms", None)
            for size in sizes:
                label = f"{size:,}-event"
                mine = per_size[size]
                figure(f"single-event append p50, {label} thread", mine["append"], "ms", None)
                if txn:
                    figure(f"  append / (/healthz + psycopg's), {label}",
                           mine["append"] / (floors["append"] + txn_p50), "x", 1.5)
                figure(f"GET /threads/{{id}}/ p50, {label} thread", mine["thread"], "ms", None)
                figure(f"  /threads/{{id}}/ / /healthz, {label}", mine["thread"] / floors["thread"], "x", 1.3)
                figure(f"GET /state/ p50, {label} thread", mine["state"], "ms", None)
                figure(f"  /state/ / /healthz, {label}", mine["state"] / floors["state"], "x", None)
                figure(f"GET /context/ 8k p50, {label} thread", mine["context"], "ms", None)
                figure(f"GET /context/ 8k record=true p50, {label} thread", mine["context_record"],
                       "ms", None)
                figure(f"  /context/ / /healthz, {label}", mine["context"] / floors["context"], "x", 2.0)
                record = mine["context_record"]
                figure(f"  /context/ record=true / /healthz, {label}", record / floors["context"], "x", 2.0)
                figure(f"  record=true / without, {label}", record / mine["context"], "x", 1.3)
                figure(f"GET /context/ 8k after an append p50, {label} thread",
                       mine["context_appended"], "ms", None)
                figure(f"  /context/ after an append / /healthz, {label}",
                       mine["context_appended"] / floors["append_again"], "x", 2.0)
            self.split(token, bases[sizes[0]], samples)
            self.search(http, bases[large], samples, figure)
            small, big = per_size[1000], per_size[large]
            for key in ("append", "thread", "state", "context", "context_appended"):
                figure(f"ratio {large:,} / 1,000 events: {key}", big[key] / small[key], "x", 1.2)
            figure("storage per event / content bytes", self.storage(), "x", 3)
        self.stdout.write(f"load average after the run {load()}")
        missed = [name for name, _, _, ok in figures if not ok]
        self.stdout.write("targets missed: " + (", ".join(missed) if missed else "none"))

    def cpu_used(self, before: tuple[float, Counter[Any]], per_second: float, what: str,
                 events: int = 1) -> None:
        """CPU time per request (of `events` events) since `before` (a time and a cpu_snapshot),
        by process kind; how busy the CPUs were; and the most events a second these CPUs could
        take at that cost, server, database and clients together."""
        elapsed = time.perf_counter() - before[0]
        used = cpu_between(before[1], cpu_snapshot())
        kinds = [kind for kind in ("server", "database", "client") if used[kind]]
        if not kinds or not per_second:  # no /proc, or nothing counted here
            return
        requests = per_second * elapsed
        parts = ", ".join(f"{kind} {used[kind] / requests * 1000:.2f} ms" for kind in kinds)
        cpus = os.cpu_count() or 1
        busy = used["machine"] / (elapsed * cpus) * 100
        ceiling = cpus * requests * events / sum(used[kind] for kind in kinds)
        self.stdout.write(f"  CPU per {what}: {parts}; CPUs {busy:.0f} % busy; at this cost "
                          f"{cpus} CPUs take at most {ceiling:,.0f} events/s")

    @staticmethod
    def commit_floor(samples: int) -> float:
        """A transaction that rewrites one small row: its COMMIT waits for the WAL flush like
        every acknowledged append (synchronous_commit stays on; a transaction that wrote
        nothing would not wait)."""
        if connection.vendor != "postgresql":
            return 0.0
        workspace, _ = workspace_ensure(slug="bench", name="Benchmarks")
        latencies = []
        for _ in range(samples):
            began = time.perf_counter()
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("UPDATE contextstore_workspace SET name = name WHERE id = %s",
                               [workspace.pk])
            latencies.append((time.perf_counter() - began) * 1000)
        return percentile(latencies, 0.5)

    def in_process_append(self, samples: int) -> float:
        """event_append called directly (no HTTP): the service's own cost per event."""
        workspace, _ = workspace_ensure(slug="bench", name="Benchmarks")
        actor = Actor.system("bench_api")
        thread, _ = thread_ensure_by_key(workspace=workspace, actor=actor,
                                         session_key=f"bench-inproc-{uuid.uuid4().hex[:8]}",
                                         name="inproc")
        thread = Thread.objects.get(pk=thread.pk)
        latencies = []
        for i in range(samples + 10):
            began = time.perf_counter()
            event_append(thread=thread, events=[message(i, "inproc")], actor=actor)
            latencies.append((time.perf_counter() - began) * 1000)
        return percentile(latencies[10:], 0.5)

    def split(self, token: str, base: str, samples: int) -> None:
        """Where a request's time goes: each hot endpoint called in this process through
        Django's whole stack (middleware, DRF, the view), its SQL timed at the cursor. The
        Python part is everything else: what a faster database could not buy back."""
        sql = SqlClock()
        client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_HOST="127.0.0.1")
        path = f"/api/v1/{base}"
        n = [0]

        def append() -> Any:
            n[0] += 1
            return client.post(f"{path}events/", {"events": [message(n[0], f"split-{uuid.uuid4().hex}")]},
                               content_type="application/json")

        calls = {"append": append, "thread": lambda: client.get(path),
                 "state": lambda: client.get(f"{path}state/"),
                 "context": lambda: client.get(f"{path}context/?max_tokens=8000")}
        rates = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"token": "off"}}
        with override_settings(REST_FRAMEWORK=rates), connection.execute_wrapper(sql):
            for name, call in calls.items():
                for _ in range(10):
                    call()
                totals: list[float] = []
                sqls: list[float] = []
                counts: list[float] = []
                for _ in range(samples):
                    sql.seconds, sql.count = 0.0, 0
                    began = time.perf_counter()
                    response = call()
                    totals.append((time.perf_counter() - began) * 1000)
                    if response.status_code >= 400:
                        raise CommandError(f"{name}: {response.status_code} {response.content[:200]!r}")
                    sqls.append(sql.seconds * 1000)
                    counts.append(sql.count)
                python = [t - q for t, q in zip(totals, sqls, strict=True)]
                self.stdout.write(
                    f"in-process {name:<8} p50 {percentile(totals, 0.5):6.2f} ms = Python "
                    f"{percentile(python, 0.5):5.2f} + SQL {percentile(sqls, 0.5):5.2f} ms "
                    f"({percentile(counts, 0.5):.0f} statements besides BEGIN/COMMIT), "
                    f"load {load()}")

    def search(self, http: Http, base: str, samples: int,
               figure: Callable[..., None]) -> None:
        """A rare word over the big thread right after its bulk load (no ANALYZE since), then
        once more with fresh statistics."""
        word = f"zebra{uuid.uuid4().hex[:6]}"
        ok(http.post(f"{base}events/", {"events": [
            {"type": "Message", "role": "user", "content": f"the rare word {word} is here"}]}))

        def find() -> urllib3.BaseHTTPResponse:
            response = http.get(f"{base}events/?q={word}")
            if len(response.json().get("results", [])) != 1:
                raise CommandError(f"search for {word} did not find the event")
            return response

        figure("rare-word search p50, big thread, no ANALYZE", p50(find, samples // 3),
               "ms", 20)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE contextstore_event")
            figure("rare-word search p50, big thread, analyzed", p50(find, samples // 3),
                   "ms", 20)

    def index_search(self) -> None:
        """What the search index's worker does after the fill (beat runs it every few seconds
        beside the server): index every queued event, here, timed."""
        if connection.vendor != "postgresql":
            return
        began = time.perf_counter()
        done = search_index_pending()
        spent = time.perf_counter() - began
        self.stdout.write(f"  (search index: {done['ids']:,} queued event ids indexed in {spent:.1f} s, "
                          f"{done['ids'] / max(spent, 1e-9):,.0f}/s, {done['batches']} batches)")

    def copy_floor(self, rows: int, rounds: int = 3) -> tuple[float, float] | None:
        """COPY of `rows` events (varied text, a third with data, a tenth with parts) into a
        bare table with only the (thread, seq) key and into a copy of the event table with its
        indexes and triggers, in turns; the median rows/s of each. All in one transaction rolled
        back at the end (the queue rows the trigger writes too). PostgreSQL only."""
        if connection.vendor != "postgresql":
            return None
        data = copy_rows(rows)
        columns = ", ".join(COPY_COLUMNS)
        rates: dict[str, list[float]] = {"bench_copy_bare": [], "bench_copy_schema": []}
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("CREATE TABLE bench_copy_schema (LIKE contextstore_event INCLUDING ALL)")
            cursor.execute("SELECT pg_get_triggerdef(oid) FROM pg_trigger "
                           "WHERE tgrelid = 'contextstore_event'::regclass AND NOT tgisinternal")
            for (definition,) in cursor.fetchall():
                cursor.execute(definition.replace(" ON public.contextstore_event ",
                                                  " ON bench_copy_schema "))
            cursor.execute("CREATE TABLE bench_copy_bare (LIKE contextstore_event INCLUDING DEFAULTS "
                           "INCLUDING IDENTITY, UNIQUE (thread_id, seq))")
            raw = connection.connection.cursor()
            for _ in range(rounds):
                for table, got in rates.items():
                    cursor.execute(f"TRUNCATE {table}")
                    began = time.perf_counter()
                    with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                        copy.write(data)
                    got.append(rows / (time.perf_counter() - began))
            transaction.set_rollback(True)
        return percentile(rates["bench_copy_bare"], 0.5), percentile(rates["bench_copy_schema"], 0.5)

    def storage(self) -> float:
        """(table + TOAST + indexes) of the event table and of its search index's table over
        the bytes of its content."""
        if connection.vendor != "postgresql":
            return 0.0
        with connection.cursor() as cursor:
            # a partitioned event table's partitions (a plain table has none: its own size)
            cursor.execute("SELECT pg_total_relation_size('contextstore_event') + coalesce("
                           "(SELECT sum(pg_total_relation_size(relid)) FROM "
                           "pg_partition_tree('contextstore_event') WHERE isleaf), 0) "
                           "+ pg_total_relation_size('contextstore_eventsearch'), "
                           "(SELECT sum(octet_length(content)) FROM contextstore_event)")
            total, content = cursor.fetchone()
        return total / max(int(content or 0), 1)

    def batch_appends(self, client: Callable[[], Http], new_thread: Callable, http: Http,
                      clients: int, seconds: float, tag: str) -> float:
        """Each client appends batches of 100 to its own thread for `seconds`."""
        thread_ids = [new_thread(http, f"batch-{clients}-{i}") for i in range(clients)]
        counts = [0] * clients
        errors: list[str] = []

        def work(index: int, going: Callable[[], bool]) -> None:
            path = f"threads/{thread_ids[index]}/events/"
            with client() as mine:
                n = 0
                body = batch_body(0, 100, f"{tag}-{clients}-{index}")
                while going():
                    response = mine.post(path, body)
                    if response.status != 201:
                        errors.append(f"{response.status} {response.data[:200]!r}")
                        return
                    n += 1
                    counts[index] += 100
                    body = batch_body(n * 100, 100, f"{tag}-{clients}-{index}")

        elapsed = for_seconds(clients, seconds, work)
        if errors:
            raise CommandError(f"append failed: {errors[0]}")
        return sum(counts) / elapsed

    def transactions(self, new_thread: Callable, http: Http, clients: int, seconds: float) -> float:
        """AppendTransaction's throughput with `clients` psycopg connections, each on its own
        thread (in its own session) for `seconds`: what 8 API clients' single appends are held
        against. 0 off PostgreSQL."""
        if connection.vendor != "postgresql":
            return 0.0
        floors = [AppendTransaction(new_thread(http, f"floor-{clients}-{i}", f"-floor{i}"))
                  for i in range(clients)]
        counts = [0] * clients

        def work(index: int, going: Callable[[], bool]) -> None:
            while going():
                floors[index]()
                counts[index] += 1

        elapsed = for_seconds(clients, seconds, work)
        for txn in floors:
            txn.close()
        return sum(counts) / elapsed

    def single_appends(self, client: Callable[[], Http], new_thread: Callable, http: Http,
                       clients: int, seconds: float, tag: str, one_session: bool) -> float:
        """Each client appends one event per request to its own thread (in one session, or each
        in its own) for `seconds`."""
        thread_ids = [new_thread(http, f"single-{clients}-{i}-{one_session}",
                                 "" if one_session else f"-{i}") for i in range(clients)]
        counts = [0] * clients
        errors: list[str] = []

        def work(index: int, going: Callable[[], bool]) -> None:
            path = f"threads/{thread_ids[index]}/events/"
            with client() as mine:
                while going():
                    response = mine.post(path, {"events": [message(counts[index], f"{tag}-s{index}")]})
                    if response.status != 201:
                        errors.append(f"{response.status} {response.data[:200]!r}")
                        return
                    counts[index] += 1

        elapsed = for_seconds(clients, seconds, work)
        if errors:
            raise CommandError(f"append failed: {errors[0]}")
        return sum(counts) / elapsed

    def settle(self) -> None:
        """Write out what the load and the fill left dirty (PostgreSQL's CHECKPOINT, where this
        role may run it; the kernel's page cache), so the reads are not timed beside it."""
        if connection.vendor == "postgresql":
            try:
                with connection.cursor() as cursor:
                    cursor.execute("CHECKPOINT")
            except DatabaseError:  # needs superuser or pg_checkpoint
                pass
        os.sync()

