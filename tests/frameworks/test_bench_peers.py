"""bench_peers end to end on tiny sizes: each framework's driver runs in its virtualenv against
its own PostgreSQL store and this run's live server, and the table comes out whole."""

import re
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"[\d,]+\.\d\d"


@pytest.mark.timeout(1200)
def test_bench_peers_prints_every_call_of_every_framework(live_server, transactional_db, token,
                                                          settings):
    if connection.vendor != "postgresql":
        pytest.skip("bench_peers compares PostgreSQL stores")
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"token": "off"}}
    settings.SERVER_TIMING = True  # as bench_peers starts its own server: ours is split by it
    for name in ("adk", "langgraph", "openai-agents"):
        build = subprocess.run([str(ROOT / "scripts/framework-venv"), name], cwd=ROOT,
                               capture_output=True, text=True, timeout=1800, check=False)
        assert build.returncode == 0, f"building .venv-{name} failed:\n{build.stderr[-3000:]}"
    out = StringIO()
    # 30 writes: past the small size, and a LangGraph list of more checkpoints than one
    # request line of blob keys holds.
    call_command("bench_peers", url=live_server.url, token=token[1], small=6, large=30, samples=3,
                 reads=2, stdout=out)
    text = out.getvalue()
    rows = {
        "adk": ["create_session", "append_event @6", "append_event @30", "get_session @30",
                "get_session(num_recent_events=50) @30", "bytes/event stored"],
        "langgraph": ["put @6", "put_writes @6", "graph step @6", "put @30", "put_writes @30",
                      "graph step @30", "get_tuple @30", "list (all) @30", "list(limit=20) @30",
                      "put, 6 messages", "put, 30 messages", "get_tuple, 6 messages",
                      "get_tuple, 30 messages", "bytes/checkpoint stored"],
        "openai-agents": ["add_items(3) @6", "add_items(3) @30", "get_items @30",
                          "get_items(limit=20) @30", "bytes/item stored"],
        **{f"openai-conversations vs {peer}": [
            "add_items(3) @6", "add_items(3) @30", "get_items @30", "get_items(limit=20) @30", "pop_item @30",
            "bytes/item stored"] for peer in ("SQLAlchemySession", "SQLiteSession")},
    }
    for framework, calls in rows.items():
        table = text.split(f"\n{framework} (p50 ms")[1].split("\n\n")[0]
        assert re.search(rf"each hop at least -?{NUMBER} ms: GET /healthz from this process took "
                         rf"{NUMBER} ms, {NUMBER} ms of it in Django", table)
        for call in calls[:-1]:  # peer, ours, ours/peer, then ours split: server, SQL, the rest, requests
            found = re.search(rf"\n[* ] {re.escape(call)} +[\d,.]+ +[\d,.]+ +{NUMBER} +({NUMBER}) "
                              rf"+({NUMBER}) +-?{NUMBER} +(\d+)\n", table + "\n")
            assert found, (framework, call, table)
            server, sql, requests = float(found[1]), float(found[2]), int(found[3])
            assert requests >= 1 and 0 < sql <= server, (framework, call, found[0])
        assert re.search(rf"\n\* {re.escape(calls[-1])} +[\d,.]+ +[\d,.]+ +{NUMBER}\n", table + "\n")
        # where our bytes went: the event table among the relations that grew
        assert re.search(r"ours by relation \(bytes/\w+, tables and each index, sum [\d,]+\): "
                         r".*\bevent [\d,]+", table), table
        if framework in ("adk", "langgraph", "openai-agents"):  # and the peer's own tables
            assert re.search(r"the peer's by relation \(bytes/\w+, tables and each index, sum [\d,]+\): "
                             r"\w+ [\d,]+", table), table
    assert "targets missed: " in text


def test_bench_peers_refuses_sqlite_and_unknown_sizes(db):
    if connection.vendor == "sqlite":
        with pytest.raises(CommandError, match="PostgreSQL"):
            call_command("bench_peers", url="http://127.0.0.1:9", token="x", stdout=StringIO())
    with pytest.raises(CommandError, match="--small"):
        call_command("bench_peers", url="http://127.0.0.1:9", token="x", small=10, large=10,
                     stdout=StringIO())


def test_a_server_without_server_timing_gets_the_plain_table():
    from django.core.management.base import OutputWrapper

    from contextstore.bench.peers import PeersBench

    out = StringIO()
    row = {"call": "put @6", "peer": 1.0, "ours": 2.0, "target": True, "samples": 3, "server": 0.0,
           "sql": 0.0, "rest": 2.0, "requests": 0}
    PeersBench(OutputWrapper(out)).table({
        "framework": "langgraph", "rows": [row], "unit": "checkpoint",
        "hop": {"round_trip": 1.0, "server": 0.4}, "bytes": {"peer": 100.0, "ours": 200.0},
        "parts": {"contextstore_event": 150.0, "contextstore_event_pkey": 20.0, "peer:checkpoints": 90.0}})
    text = out.getvalue()
    assert "split into" not in text and "server" not in text.splitlines()[2]
    assert re.search(r"\n\* put @6 +1\.00 +2\.00 +2\.00\n", text), text
    assert "start it with SERVER_TIMING=true" in text
    assert ("ours by relation (bytes/checkpoint, tables and each index, sum 170): event 150, "
            "event_pkey 20") in text
    assert "the peer's by relation (bytes/checkpoint, tables and each index, sum 90): checkpoints 90" in text
