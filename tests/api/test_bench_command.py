import re
import time
from collections import Counter
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError, OutputWrapper
from django.db import connection

from contextstore.bench import api as bench_api
from contextstore.bench.api import cpu_snapshot
from contextstore.models import Run, Thread


def test_bench_api_reports_every_figure_against_a_running_server(live_server, transactional_db,
                                                                token):
    out = StringIO()
    call_command("bench_api", url=live_server.url, token=token[1], seconds=0.2, large=300,
                 samples=5, stdout=out)
    text = out.getvalue()
    number = r"[\d,]+\.\d\d"
    assert re.search(rf"GET /healthz p50 \(the floor\) +{number} ms", text)
    for clients in (1, 4):
        assert re.search(rf"batch appends \(100/request\), {clients} clients? +{number} events/s",
                         text)
    assert re.search(rf"single-event appends, 8 clients, 8 sessions +{number} appends/s", text)
    assert re.search(rf"single-event appends, 8 clients, 1 session +{number} appends/s", text)
    assert re.search(rf"single-event append in-process p50 +{number} ms", text)
    for size in ("1,000", "300"):
        for name in ("single-event append", "GET /threads/{id}/", "GET /state/", "GET /context/ 8k",
                     "GET /context/ 8k record=true"):
            assert re.search(rf"{re.escape(name)} p50, {size}-event thread +{number} ms", text), (name, size)
        # the targets are ratios to floors measured in the same run
        for name, target in (("/threads/{id}/ / /healthz", "1.3"), ("/context/ / /healthz", "2.0"),
                             ("/context/ record=true / /healthz", "2.0"), ("record=true / without", "1.3"),
                             ("/context/ after an append / /healthz", "2.0")):
            assert re.search(rf"  {re.escape(name)}, {size}-event +{number} x +<= {target}", text), name
        assert re.search(rf"  /state/ / /healthz, {size}-event +{number} x", text)
    postgres = connection.vendor == "postgresql"
    # the append's floors: psycopg's own transaction, alone and with 8 clients (PostgreSQL)
    assert bool(re.search(rf"append transaction by psycopg p50 \(the floor\) +{number} ms", text)) == postgres
    assert bool(re.search(rf"append transactions by psycopg, 8 clients \(the floor\) +{number} txn/s",
                          text)) == postgres
    assert bool(re.search(rf"  single appends, 8 clients / psycopg's +{number} x +>= 0.50", text)) == postgres
    for size in ("1,000", "300"):
        assert bool(re.search(rf"  append / \(/healthz \+ psycopg's\), {size}-event +{number} x +<= 1.5",
                              text)) == postgres
    for key in ("append", "thread", "state", "context"):
        assert re.search(rf"ratio 300 / 1,000 events: {key} +{number} x +<= 1.2", text)
    for name in ("append", "thread", "state", "context"):
        assert re.search(rf"in-process {name} +p50 +{number} ms = Python +{number} \+ SQL +"
                         rf"{number} ms \(\d+ statements", text), name
    assert re.search(rf"rare-word search p50, big thread, no ANALYZE +{number} ms +<= 20.0", text)
    assert re.search(rf"storage per event / content bytes +{number} x +<= 3.0", text)
    assert re.search(r"targets missed: ", text)
    assert "load average" in text
    # the live server runs in this process: its CPU counts as the client's
    for what in ("batch", "append"):
        assert re.search(rf"  CPU per {what}: .*client {number} ms; CPUs \d+ % busy; at this cost "
                         rf"\d+ CPUs take at most [\d,]+ events/s", text), what


def test_cpu_snapshot_counts_this_process_and_the_database(db):
    before = cpu_snapshot()
    started = time.process_time()
    while time.process_time() - started < 0.3:
        sum(range(10_000))
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM generate_series(1, 3000000) AS n WHERE n % 7 = 0")
    after = cpu_snapshot()
    assert after["client"] - before["client"] >= 0.25
    assert after["machine"] - before["machine"] >= 0.25
    if connection.vendor == "postgresql":  # the server runs on this machine in the suite
        # by process: a backend of another connection that exits meanwhile takes its CPU out of
        # the total, which may then fall
        grown = sum(seconds - before.get(key, 0) for key, seconds in after.items()
                    if isinstance(key, tuple) and key[0] == "database")
        assert grown >= 0.05


def test_cpu_used_divides_the_cpu_by_the_requests_and_says_what_the_cpus_could_take(monkeypatch):
    # 100 batches of 100 events in 2 s cost 2 s of server, 1 s of database and 1 s of client CPU
    monkeypatch.setattr(bench_api, "cpu_snapshot", lambda: Counter({
        ("server", "11"): 1.5, ("server", "12"): 0.5, ("database", "21"): 1.0, ("client", "31"): 1.0,
        "machine": 4.0}))
    monkeypatch.setattr(bench_api.os, "cpu_count", lambda: 2)
    out = StringIO()
    command = bench_api.ApiBench(OutputWrapper(out))
    command.cpu_used((time.perf_counter() - 2.0, Counter()), 50, "batch", events=100)
    assert out.getvalue() == ("  CPU per batch: server 20.00 ms, database 10.00 ms, client 10.00 ms; "
                              "CPUs 100 % busy; at this cost 2 CPUs take at most 5,000 events/s\n")
    # a server and database elsewhere, and no tick of this process's: nothing to divide
    monkeypatch.setattr(bench_api, "cpu_snapshot", lambda: Counter(machine=4.0))
    command.cpu_used((time.perf_counter() - 2.0, Counter()), 50, "batch", events=100)
    assert out.getvalue().count("CPU per") == 1


@pytest.mark.slow
def test_bench_core_reports_the_revision_figures(db):
    out = StringIO()
    call_command("bench_core", sizes="20,40", repeat=1, revisions=5, state_sizes="1000,20000",
                 stdout=out)
    text = out.getvalue()
    for size in ("1,000", "20,000"):
        assert re.search(rf"state of +{size} B: revision [\d.]+ ms median, [\d.]+ ms mean .*"
                         rf"whole write [\d.]+ ms; HTTP PATCH [\d.]+ ms; stored [\d,]+ B/revision",
                         text)
        assert re.search(rf"state of +{size} B: revision alone [\d.]+ ms median", text)
    assert re.search(r"revision alone: 20,000 B vs 1,000 B state \(median, target <= 1.5\): [\d.]+x",
                     text)


def test_bench_turns_times_two_servers_request_by_request(live_server, transactional_db, token):
    out = StringIO()
    call_command("bench_turns", url=live_server.url, other_url=live_server.url, token=token[1],
                 samples=3, size=30, stdout=out)
    text = out.getvalue()
    number = r"\d+\.\d\d"
    for kind in ("ADK create_session", "ADK append_event (commit)", "Agents add_items(3) (commit)",
                 "LangGraph put (commit)",
                 "single-event append", "batch of 100 events", "GET /threads/{id}/",
                 "GET /state/", "GET /context/ 8k", "GET /context/ 8k record=true"):
        assert re.search(rf"{re.escape(kind)} p50 +this +{number} ms +other +{number} ms +"
                         rf"this/other \d+\.\d\d\d", text), kind
    # each side's own thread: the fill, then 13 single appends and 13 batches (10 to warm up)
    sides = Thread.objects.filter(session__key__startswith="turns-")
    assert sorted(t.event_count for t in sides) == [30 + 13 + 1300] * 2
    # the framework saves, 13 of each kind per side, each side in a session of its own
    saves = {app: sorted(Thread.objects.filter(session__app=f"turns-{app}").values_list(
        "event_count", flat=True)) for app in ("adk", "agents", "langgraph")}
    assert saves == {"adk": [13, 13], "agents": [39, 39], "langgraph": [13, 13]}
    assert Run.objects.filter(thread__session__app="turns-adk").count() == 2 * 7
    # a new session for each create_session, with its thread
    assert Thread.objects.filter(session__app="turns-create").count() == 2 * 13
    with pytest.raises(CommandError, match="--other PATH or --other-url"):
        call_command("bench_turns", url=live_server.url, token=token[1])


def test_bench_wal_reports_wal_and_storage_per_event(transactional_db):
    out = StringIO()
    if connection.vendor != "postgresql":
        with pytest.raises(CommandError, match="PostgreSQL's WAL"):
            call_command("bench_wal", events=100, rounds=1, stdout=out)
        return
    call_command("bench_wal", events=100, rounds=1, chars=300, stdout=out)
    text = out.getvalue()
    figures = {name: int(value.replace(",", "")) for name, value in re.findall(
        r"WAL per event, (single-event appends|batches of 100|search index worker): +([\d,]+) bytes",
        text)}
    assert set(figures) == {"single-event appends", "batches of 100", "search index worker"}
    # a single append's transaction (audit row, counters, commit) is more than a batch's share
    assert figures["single-event appends"] > figures["batches of 100"] > 300
    assert re.search(r"messages of 300 characters", text)
    assert re.search(r"storage per event \(all contextstore tables, indexes, TOAST\): [\d,]+ bytes", text)
    assert not Thread.objects.filter(session__workspace__slug="bench-wal").exists()


def test_cpu_between_counts_the_processes_alive_at_the_end():
    before = Counter({("database", "21"): 5.0, ("database", "22"): 9.0, ("server", "11"): 1.0,
                      "machine": 10.0})
    # 22 exited meanwhile (an autovacuum worker); 23 started; 11 went on
    after = Counter({("database", "21"): 5.5, ("database", "23"): 0.25, ("server", "11"): 3.0,
                     "machine": 14.0})
    assert bench_api.cpu_between(before, after) == Counter(database=0.75, server=2.0, machine=4.0)
