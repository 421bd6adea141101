"""DATABASE_POOLER=pgbouncer: nothing the app keeps on a server connection outlives a transaction.

The real PgBouncer (Debian's package), in transaction pooling with two server connections, in
front of the test database: eight threads append and read through it at once. A server-side
cursor (Django's .iterator() in autocommit declares one WITH HOLD), a named prepared statement or
a session SET would surface as "cursor ... does not exist", "prepared statement ... does not
exist" or a lost setting; the first test shows the cursor failure happens without the setting.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import psycopg
import pytest
from django.db import connection, connections
from django.db.utils import DatabaseError

from contextstore.models import Event, StateRevision
from contextstore.selectors.document import revision_documents
from contextstore.services import history
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.state import state_write

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "pgbouncer-for-tests"
THREADS, BATCHES, BATCH = 8, 4, 5

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not shutil.which("pgbouncer"), reason="pgbouncer is not installed"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def pooled(transactional_db):
    """The default connection, in this thread and any new one, goes through a PgBouncer of two
    server connections; yields its port. The pooler's side of the settings is applied here as
    project/settings.py applies it under DATABASE_POOLER=pgbouncer."""
    if connection.vendor != "postgresql":
        pytest.skip("PgBouncer pools PostgreSQL connections")
    # Under /tmp, not tmp_path: as root the script runs PgBouncer as `postgres`, who must reach it.
    port, run_dir = _free_port(), Path(tempfile.mkdtemp(prefix="cs-pgbouncer-"))
    server_port = str(connection.settings_dict["PORT"] or 5432)
    if os.environ.get("DATABASE_POOLER"):  # already behind the CI's pooler: go to its server
        server_port = "5432"
    subprocess.run([str(SCRIPT), "start", str(run_dir), str(port), "2"], check=True, timeout=30,
                   env=os.environ | {"SERVER_PORT": server_port})
    connections.close_all()
    settings = connection.settings_dict  # shared by every thread's connection to "default"
    saved = dict(settings)
    options = dict(settings.get("OPTIONS", {}))
    options.pop("options", None)  # PgBouncer refuses the startup parameter
    options["prepare_threshold"] = None  # a statement prepared on one server connection only
    settings.update(OPTIONS=options, HOST="127.0.0.1", PORT=str(port), DISABLE_SERVER_SIDE_CURSORS=True)
    try:
        yield port
    finally:
        connections.close_all()
        settings.clear()
        settings.update(saved)
        subprocess.run([str(SCRIPT), "stop", str(run_dir)], check=True, timeout=30)
        shutil.rmtree(run_dir)


def _admin(port: int, command: str) -> list[list[str]]:
    """PgBouncer's admin console (simple query protocol only, so psql)."""
    out = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d", "pgbouncer",
                          "-tAF", "|", "-c", command], check=True, capture_output=True, text=True,
                         timeout=30).stdout
    return [line.split("|") for line in out.splitlines() if line]


def _on_server_connection_held_by_another_client(work) -> None:
    """Run `work` in a new thread while the server connection this thread last used is taken by
    another client (PgBouncer hands out the most recently freed server first)."""
    taken, done = threading.Event(), threading.Event()

    def other() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("BEGIN")
                cursor.execute("SELECT 1")
                taken.set()
                done.wait(20)
                cursor.execute("COMMIT")
        finally:
            connections.close_all()

    holder = threading.Thread(target=other)
    holder.start()
    try:
        assert taken.wait(20)
        work()
    finally:
        done.set()
        holder.join()


def test_without_the_setting_a_server_side_cursor_is_lost_between_transactions(pooled, thread, actor):
    """The control: what DISABLE_SERVER_SIDE_CURSORS prevents does happen through the pooler."""
    event_append(thread=thread, actor=actor, events=[{"type": "Message", "content": f"m{i}"}
                                                     for i in range(5)])
    connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] = False
    connections.close_all()
    rows = Event.objects.filter(thread=thread).values_list("seq", flat=True).iterator(chunk_size=2)
    assert next(rows) == 1  # DECLARE ... WITH HOLD and the first FETCH, then the server is freed
    # Django's error, then psycopg's again from closing the cursor that is not there
    with pytest.raises((DatabaseError, psycopg.Error), match="cursor .* does not exist"):
        _on_server_connection_held_by_another_client(lambda: list(rows))
    connections.close_all()
    connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] = True
    rows = Event.objects.filter(thread=thread).values_list("seq", flat=True).iterator(chunk_size=2)
    assert next(rows) == 1
    seen: list[int] = []
    _on_server_connection_held_by_another_client(lambda: seen.extend(rows))
    assert seen == [2, 3, 4, 5]


def test_threads_through_a_pool_of_two_append_and_read_exactly(pooled, thread, session):
    errors: list[BaseException] = []

    def run(w: int) -> None:
        try:
            for b in range(BATCHES):
                events = [{"type": "Message", "content": f"w{w} b{b} e{i}", "client_id": f"{w}-{b}-{i}"}
                          for i in range(BATCH)]
                event_append(thread=thread, actor=Actor.worker(f"w{w}"), events=events)
                event_append(thread=thread, actor=Actor.worker(f"w{w}"), events=events)  # a retry
                state_write(thread=thread, actor=Actor.worker(f"w{w}"), state={f"w{w}": b}, merge=True)
                history.counters_recount(session=session)  # .iterator() reads
                revisions = list(StateRevision.objects.filter(thread=thread)
                                 .values_list("revision", flat=True)[:3])
                revision_documents(thread=thread, revisions=revisions)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=run, args=(w,)) for w in range(THREADS)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(120)
    assert not errors, errors
    total = THREADS * BATCHES * BATCH
    seqs = list(Event.objects.filter(thread=thread).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, total + 1))
    thread.refresh_from_db()
    assert (thread.last_seq, thread.event_count) == (total, total)
    assert thread.state == {f"w{w}": BATCHES - 1 for w in range(THREADS)}
    assert history.counters_recount(session=session)["threads"][thread.pk]["event_count"] == total
    # Through the pooler, on no more than its two server connections, in many transactions.
    name = connection.settings_dict["NAME"]
    pools = [row for row in _admin(pooled, "SHOW SERVERS") if row[2] == name]  # type, user, database
    assert 1 <= len(pools) <= 2
    stats = {row[0]: row for row in _admin(pooled, "SHOW STATS")}
    assert int(stats[name][1]) >= THREADS * BATCHES * 3  # total_xact_count
    with connection.cursor() as cursor:  # the statement timeout holds without the startup option
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "30s"
