"""The event table hash-partitioned by thread (contextstore/partitions.py, PostgreSQL only):
moved with data, every constraint still refuses what it refused, the hot queries and erasure
work; and moved online while another thread writes, every row identical after, counts exact.

Each test runs in a database of its own (a copy of the test database, dropped after), so the
suite's event table is never the partitioned one."""

import random
import threading
import time
from collections.abc import Iterator

import pytest
from django.conf import settings as django_settings
from django.db import IntegrityError, connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from contextstore.models import Collapse, Event, EventSearch, Memory
from contextstore.partitions import move_events, partition_count
from contextstore.selectors.events import event_search, text_candidates, thread_events
from contextstore.selectors.rendering import context_render
from contextstore.services.common import Actor
from contextstore.services.erasure import user_erase
from contextstore.services.events import event_append
from contextstore.services.search import search_index_pending
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.workspaces import workspace_ensure
from tests.conftest import messages

pytestmark = [pytest.mark.skipif("connection.vendor != 'postgresql'"),
              # the move is DDL run straight against PostgreSQL, and each test copies the test
              # database (CREATE DATABASE ... TEMPLATE), which PgBouncer's idle connections forbid
              pytest.mark.skipif(bool(django_settings.DATABASE_POOLER),
                                 reason="run directly, not through a pooler"),
              pytest.mark.django_db(transaction=True)]
ACTOR = Actor.system("tests")


@pytest.fixture
def own_database() -> Iterator[None]:
    """The test database copied (CREATE DATABASE … TEMPLATE) and used by every connection."""
    settings_dict = connection.settings_dict  # the dict every thread's new connection reads
    name = settings_dict["NAME"]
    copy = f"{name}_partitions"
    connections.close_all()
    with connection._nodb_cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{copy}"')
        cursor.execute(f'CREATE DATABASE "{copy}" TEMPLATE "{name}"')
    settings_dict["NAME"] = copy
    try:
        yield
    finally:
        connections.close_all()
        settings_dict["NAME"] = name
        with connection._nodb_cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{copy}" WITH (FORCE)')


def new_thread(user_id: str, key: str):
    workspace = workspace_ensure(slug="acme", name="Acme")[0]
    session = session_ensure(workspace=workspace, key=key, user_id=user_id, agent="helper",
                             actor=ACTOR)[0]
    return thread_ensure(session=session, actor=ACTOR)[0]


def rows() -> dict[int, tuple]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM contextstore_event ORDER BY id")
        return {row[0]: row for row in cursor.fetchall()}


def test_partitioned_with_data_keeps_every_constraint_and_query(own_database, settings):
    settings.EVENT_PARTITIONS = 16  # a thread's search names the thread (one partition planned)
    alice, bob = new_thread("alice", "s-a"), new_thread("bob", "s-b")
    event_append(thread=alice, events=messages(30) + [
        {"type": "Message", "role": "tool", "content": "raised FileNotFoundError", "client_id": "c-1"}],
        actor=ACTOR)
    event_append(thread=bob, events=messages(20), actor=ACTOR)
    first = Event.objects.filter(thread=alice).order_by("seq").first()
    Memory.objects.create(workspace=alice.workspace, user_id="alice", key="k", content="remember",
                          source_event=first)
    search_index_pending()
    before = rows()

    assert move_events(16, batch=7) == len(before)
    assert partition_count() == 16 and rows() == before
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = 'contextstore_event'::regclass")
        assert cursor.fetchone()[0] == 16
        cursor.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = 'contextstore_event'::regclass "
                       "AND NOT tgisinternal ORDER BY 1")
        assert [name for (name,) in cursor.fetchall()] == ["event_search_delete", "event_search_insert",
                                                        "event_search_update"]

    # the unique keys still refuse: (thread, seq), client id, a current item key
    template = Event.objects.filter(thread=alice).order_by("seq").first()
    for change in ({"seq": 1}, {"seq": 900, "client_id": "c-1"}):
        with pytest.raises(IntegrityError), transaction.atomic():
            Event.objects.create(**{**model_values(template), **change})
    Event.objects.create(**{**model_values(template), "seq": 901, "client_id": None, "item_key": "a:1"})
    with pytest.raises(IntegrityError), transaction.atomic():
        Event.objects.create(**{**model_values(template), "seq": 902, "client_id": None, "item_key": "a:1"})
    Event.objects.create(**{**model_values(template), "seq": 903, "client_id": None, "item_key": "a:1",
                            "status": "replaced"})  # a retired version may share it
    Event.objects.filter(seq__gte=900).delete()  # outside the thread's counters: gone again

    # append, render, search (queued and indexed); new ids follow the old ones
    result = event_append(thread=alice, events=[{"type": "Message", "role": "user",
                                                 "content": "a quokka appears"}], actor=ACTOR)
    assert result.events[0].pk > max(before)
    alice.refresh_from_db()
    assert context_render(thread=alice, max_tokens=8000)["messages"][-1]["content"] == "a quokka appears"
    assert [e.seq for e in event_search(thread=alice, text="quokka")] == [result.events[0].seq]
    search_index_pending()
    assert [e.seq for e in event_search(thread=alice, text="FileNotFound")] == [31]
    indexed = EventSearch.objects.filter(thread_id=alice.pk).count()
    assert indexed == Event.objects.filter(thread=alice).count()

    # erasure: alice's events, their indexed text (ON DELETE CASCADE) and her memory's source go
    user_erase(workspace=alice.workspace, user_id="alice", actor=ACTOR, batch_size=10)
    assert not Event.objects.filter(thread_id=alice.pk).exists()
    assert not EventSearch.objects.filter(thread_id=alice.pk).exists()
    assert not Memory.objects.filter(user_id="alice").exists()
    assert Event.objects.filter(thread=bob).count() == 20
    assert not Collapse.objects.exists()
    # no foreign key in the database for a memory's source: Django's SET_NULL still clears it
    last = Event.objects.filter(thread=bob).order_by("-seq").first()
    memory = Memory.objects.create(workspace=bob.workspace, user_id="bob", content="m", source_event=last)
    last.delete()
    memory.refresh_from_db()
    assert memory.source_event_id is None

    assert move_events(0) == 19 and partition_count() == 1  # and back to one table
    assert Event.objects.filter(thread=bob).count() == 19
    with connection.cursor() as cursor:  # the search text's foreign key is back, the trigger gone
        cursor.execute("SELECT conname FROM pg_constraint WHERE conrelid = "
                       "'contextstore_eventsearch'::regclass AND contype = 'f' UNION ALL "
                       "SELECT tgname FROM pg_trigger WHERE tgname = 'event_search_delete'")
        assert cursor.fetchall() == [("eventsearch_event_fk",)]


def test_a_thread_newer_than_its_partitions_statistics_is_searched_by_key(own_database, settings):
    """A thread's queued events are read by their ids (the primary key), not by walking the
    thread: its partition's statistics, taken before the thread existed, call it one row."""
    settings.EVENT_PARTITIONS = 4
    for n in range(8):
        event_append(thread=new_thread("u", f"s-{n}"), events=messages(50), actor=ACTOR)
    search_index_pending()
    move_events(4)  # and ANALYZE: the statistics know these eight threads only
    big = new_thread("u", "s-big")
    event_append(thread=big, events=messages(1000), actor=ACTOR)  # queued, not indexed
    event_append(thread=big, events=[{"type": "Message", "role": "user", "content": "a quokka"}],
                 actor=ACTOR)
    big.refresh_from_db()
    for _ in range(2):
        with CaptureQueriesContext(connection) as captured:
            assert len(text_candidates(big, "quokka") or []) == 1
        lookup, candidates = (explain(query["sql"].split("; ")[-1]) for query in captured.captured_queries)
        assert "thread_id_seq_key" in lookup and "Seq Scan" not in lookup, lookup  # the partition
        scanned = {word for word in candidates.split() if word.startswith("contextstore_event_h")}
        assert len(scanned) == 2, candidates  # one partition: its table and its primary key
        assert "_pkey" in candidates and "thread_id_seq" not in candidates, candidates
        page = thread_events(thread=big, text="quokka").explain()  # the page: by (thread, seq)
        assert "Index Cond: ((thread_id = " in page and "AND (seq = " in page, page
        with connection.cursor() as cursor:  # then with statistics that know the thread
            cursor.execute("ANALYZE contextstore_event")


def explain(sql: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}")
        return "\n".join(line for (line,) in cursor.fetchall())


def model_values(event: Event) -> dict:
    return {f.attname: getattr(event, f.attname) for f in Event._meta.concrete_fields if not f.primary_key}


def test_the_online_move_loses_no_concurrent_write(own_database):
    threads = [new_thread("alice", f"s-{i}") for i in range(4)]
    for thread in threads:
        event_append(thread=thread, events=messages(40), actor=ACTOR)
    initial = rows()
    expected = dict(initial)
    deleted: set[int] = set()
    done = threading.Event()
    writes = [0]
    errors: list[BaseException] = []

    def writer() -> None:  # appends, rewrites a row's content, deletes a row: each its own transaction
        chance = random.Random(7)
        try:
            for i in range(150):
                thread = threads[i % 4]
                appended = event_append(thread=thread, events=messages(1, start=1000 + i), actor=ACTOR)
                with connection.cursor() as cursor:  # what the writer knows of each row it wrote
                    cursor.execute("SELECT * FROM contextstore_event WHERE id = %s", [appended.events[0].pk])
                    row = cursor.fetchone()
                    expected[row[0]] = row
                    if i % 3 == 0:
                        cursor.execute("UPDATE contextstore_event SET content = %s WHERE id = %s "
                                       "RETURNING *", [f"rewritten {i}", chance.choice(sorted(expected))])
                        row = cursor.fetchone()
                        expected[row[0]] = row
                    if i % 5 == 0:
                        target = chance.choice(sorted(expected))
                        cursor.execute("DELETE FROM contextstore_event WHERE id = %s", [target])
                        del expected[target]
                        deleted.add(target)
                writes[0] += 1
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)
        finally:
            connection.close()
            done.set()

    seen: list[int] = []

    def between() -> None:  # let the writer run between batches
        seen.append(writes[0])
        time.sleep(0.02)

    worker = threading.Thread(target=writer)
    worker.start()
    while writes[0] < 5:
        time.sleep(0.01)
    copied = move_events(8, batch=10, between=between)
    worker.join(60)
    assert done.is_set() and not errors, errors
    assert seen[0] < seen[-1], "the writer wrote during the copy"
    assert 0 < copied <= len(initial) + 150
    final = rows()
    assert len(final) == len(initial) + 150 - len(deleted)
    assert final == expected  # every row, every column, as the writer left it
    assert partition_count() == 8
    with connection.cursor() as cursor:  # one identity sequence, past every id
        cursor.execute("SELECT pg_get_serial_sequence('contextstore_event', 'id'), "
                       "(SELECT last_value FROM contextstore_event_id_seq)")
        sequence, last = cursor.fetchone()
        assert sequence == "public.contextstore_event_id_seq" and last >= max(final)
        cursor.execute("SELECT to_regclass('contextstore_event_old'), to_regclass('contextstore_event_new')")
        assert cursor.fetchone() == (None, None)
