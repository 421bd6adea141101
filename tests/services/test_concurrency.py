"""Several processes append to one thread at once: no event lost or duplicated, seq gap-free."""


import pytest
from django.db import connection, connections

from contextstore.models import Event, Thread
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from tests.processes import FORK, forked, run_forked

WRITERS = 4
BATCHES = 15
BATCH = 10


def _writer(thread_pk: int, writer: int) -> None:
    connections.close_all()  # the child opens its own connection
    thread = Thread.objects.get(pk=thread_pk)
    for b in range(BATCHES):
        events = [
            {"type": "Message", "content": f"w{writer} b{b} e{i}", "client_id": f"w{writer}-{b}-{i}"}
            for i in range(BATCH)
        ]
        event_append(thread=thread, events=events, actor=Actor.worker(f"writer-{writer}"))
        if b % 5 == 0:  # a retried batch must not duplicate anything
            event_append(thread=thread, events=events, actor=Actor.worker(f"writer-{writer}"))
    connections.close_all()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_in_several_processes_lose_and_duplicate_nothing(thread):
    if connection.vendor != "postgresql":
        pytest.skip("the multi-process test runs against PostgreSQL")
    run_forked(_writer, [(thread.pk, w) for w in range(WRITERS)])
    total = WRITERS * BATCHES * BATCH
    seqs = list(Event.objects.filter(thread=thread).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, total + 1))
    contents = set(Event.objects.filter(thread=thread).values_list("content", flat=True))
    assert len(contents) == total
    thread.refresh_from_db()
    assert (thread.last_seq, thread.event_count, thread.active_event_count) == (total, total, total)
    # per writer, its events keep the order it sent them in
    for w in range(WRITERS):
        mine = list(Event.objects.filter(thread=thread, content__startswith=f"w{w} ")
                    .order_by("seq").values_list("content", flat=True))
        assert mine == [f"w{w} b{b} e{i}" for b in range(BATCHES) for i in range(BATCH)]


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_in_threads_keep_seq_gap_free(thread):
    """The same guarantee with OS threads, so it also holds on the SQLite default."""
    import threading

    errors: list[BaseException] = []

    def run(w: int) -> None:
        try:
            for b in range(5):
                event_append(thread=thread, actor=Actor.worker("t"), events=[
                    {"type": "Message", "content": f"{w}-{b}-{i}"} for i in range(5)])
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=run, args=(w,)) for w in range(4)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert not errors
    seqs = list(Event.objects.filter(thread=thread).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, 101))


@pytest.mark.django_db(transaction=True)
def test_an_agent_and_a_person_editing_one_block_keep_every_version(thread):
    """An agent rewrites a block while a person restores and deletes it from the dashboard:
    every change is a kept version with its own number, and the block matches the last one."""
    import threading

    from contextstore.errors import NotFound
    from contextstore.models import ContextBlock, ContextBlockVersion
    from contextstore.services.blocks import block_delete, block_restore, block_upsert

    block_upsert(thread=thread, name="plan", value="v0", actor=Actor.system("setup"))
    errors: list[BaseException] = []

    def agent() -> None:
        try:
            for i in range(10):
                block_upsert(thread=thread, name="plan", value=f"agent {i}", actor=Actor.worker("agent"))
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    def person() -> None:
        try:
            for _ in range(5):
                block_restore(thread=thread, name="plan", version=1, actor=Actor.system("person"))
                try:
                    block_delete(thread=thread, name="plan", actor=Actor.system("person"))
                except NotFound:
                    pass
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=agent), threading.Thread(target=person)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert not errors
    versions = list(ContextBlockVersion.objects.filter(thread=thread, name="plan")
                    .order_by("version").values_list("version", "value", "deleted"))
    assert [v for v, _, _ in versions] == list(range(1, len(versions) + 1))
    assert len(versions) >= 1 + 10 + 5
    last = versions[-1]
    block = ContextBlock.objects.filter(thread=thread, name="plan").first()
    if last[2]:
        assert block is None
    else:
        assert (block.version, block.value) == (last[0], last[1])


def _same_batches(thread_pk: int, results) -> None:
    connections.close_all()
    thread = Thread.objects.get(pk=thread_pk)
    got = []
    for b in range(8):
        events = [{"type": "Message", "content": f"b{b} e{i}", "client_id": f"same-{b}-{i}"}
                  for i in range(40)]
        got.append([e.pk for e in event_append(thread=thread, events=events,
                                               actor=Actor.worker("retrier")).events])
    results.put(got)
    connections.close_all()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_processes_sending_the_same_big_batches_at_once_store_each_event_once(thread):
    """A client's retry can race its first attempt from another process: three processes send
    the same eight batches of 40 (the one-statement path, any size); each event is stored once
    and every process gets the same events back."""
    if connection.vendor != "postgresql":
        pytest.skip("the multi-process test runs against PostgreSQL")
    results = FORK.Queue()
    with forked(_same_batches, [(thread.pk, results)] * 3) as procs:
        answers = [results.get(timeout=120) for _ in procs]
    assert answers[0] == answers[1] == answers[2]
    stored = list(Event.objects.filter(thread=thread).order_by("seq").values_list("seq", "client_id"))
    assert stored == [(n + 1, f"same-{n // 40}-{n % 40}") for n in range(320)]
    thread.refresh_from_db()
    assert (thread.last_seq, thread.event_count) == (320, 320)
