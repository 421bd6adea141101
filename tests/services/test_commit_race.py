"""Two identical commits race on PostgreSQL: the second waits for the thread's lock while the
first is still open, then replays the first's answer and writes nothing of its own."""

import threading
import time

import pytest
from django.db import connection, connections, transaction

from contextstore.models import AuditLog, CommitRecord, Event, ThreadBlob
from contextstore.selectors.agent_sessions import Identity
from contextstore.services.agent_sessions import BlobIn, CommitIn, session_commit
from contextstore.services.common import Actor

WHO = Identity(app="lg", user_id="", key="t1")
PAYLOADS = {
    # no event: only the commit record's insert finds the first (ON CONFLICT DO NOTHING)
    "blobs": dict(blobs=[BlobIn(key="w/1/t/0", data=b"x")]),
    # the event's client_id is found first, by the folded insert
    "event and blobs": dict(events=[{"type": "Checkpoint", "client_id": "c1"}],
                            blobs=[BlobIn(key="cp/c1", data=b"x")]),
    # the expected last seq is stale once the first ended (ADK's append)
    "expected last seq": dict(events=[{"type": "Message", "content": "hi"}], state={"n": 1},
                              expected_last_seq=0),
}


def _waiting_for_a_lock() -> bool:
    with connection.cursor() as cursor:  # asked inside a transaction: a fresh view each time
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0] > 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_a_commit_that_waited_for_an_identical_one_replays_its_answer(workspace, payload):
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL")
    actor = Actor.system("tests")
    session_commit(workspace=workspace, identity=WHO, commit=CommitIn(create=True), actor=actor)
    commit = CommitIn(**PAYLOADS[payload], batch_id="b1")
    first_open, answers, errors, waited = threading.Event(), {}, [], []

    def first() -> None:
        try:
            with transaction.atomic():  # the first commit stays open (its lock held) until told
                answers["first"] = session_commit(workspace=workspace, identity=WHO, commit=commit,
                                                  actor=actor)
                first_open.set()
                deadline = time.monotonic() + 10
                while not _waiting_for_a_lock() and not errors and time.monotonic() < deadline:
                    time.sleep(0.02)
                waited.append(time.monotonic() < deadline)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            first_open.set()
            connections.close_all()

    def second() -> None:
        try:
            first_open.wait(10)
            answers["second"] = session_commit(workspace=workspace, identity=WHO, commit=commit,
                                               actor=actor)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=first), threading.Thread(target=second)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert not errors, errors
    assert waited == [True]  # the second waited for the first's lock
    assert answers["second"] == answers["first"]
    assert CommitRecord.objects.count() == 1
    assert Event.objects.count() == len(commit.events)
    assert ThreadBlob.objects.count() == len(commit.blobs)
    actions = list(AuditLog.objects.exclude(action__in=["session.create", "thread.create"])
                   .values_list("action", flat=True))
    # one audit row for the commit (and the state patch's own)
    assert sorted(actions) == sorted(["events.append" if commit.events else "blobs.put",
                                      *(["state.patch"] if commit.state else [])])
