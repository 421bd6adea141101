"""The one door of a framework save (services/commits.py): sync and agent sessions share its
replay store, its expiry, its stale check and its fast path."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from contextstore.errors import Conflict, StaleRevision
from contextstore.models import CommitRecord, Event, Thread
from contextstore.selectors.agent_sessions import Identity
from contextstore.services.agent_sessions import CommitIn, session_commit
from contextstore.services.commits import commit_records_prune, unpacked
from contextstore.services.common import Actor
from contextstore.services.sync import sync_apply
from tests.services.test_commit_race import _waiting_for_a_lock


def item(key: str, text: str) -> dict:
    return {"key": key, "event": {"type": "Message", "role": "user", "content": text}}


def test_a_sync_save_and_a_session_commit_keep_their_answers_in_one_store(workspace, thread, actor):
    saved = sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("a", "one")],
                       upload_id="u1", state={"n": 1})
    committed = session_commit(workspace=workspace, identity=Identity(app="adk", user_id="u", key="s"),
                               commit=CommitIn(events=[{"type": "Message", "content": "hi"}],
                                               batch_id="b1", create=True), actor=actor)
    stored = {r.batch_id: unpacked(r.thread, r.response) for r in CommitRecord.objects.all()}
    assert stored == {"u1": saved, "b1": committed}


def test_a_record_keeps_a_fresh_append_as_its_range_of_seqs_and_a_replay_gets_the_whole_answer(
        workspace, actor):
    who = Identity(app="adk", user_id="u", key="s")
    commit = CommitIn(events=[{"type": "Message", "content": f"m{i}", "client_id": f"c{i}"}
                              for i in range(3)], state={"n": 1}, batch_id="b1", create=True)
    first = session_commit(workspace=workspace, identity=who, commit=commit, actor=actor)
    session_commit(workspace=workspace, identity=who, actor=actor, commit=CommitIn(
        events=[{"type": "Message", "content": "later"}], batch_id="b2"))
    [record] = CommitRecord.objects.filter(batch_id="b1")
    assert record.response == {"revision": 1, "last_seq": 3, "events@": [1, 3],
                               "app_revision": 0, "user_revision": 0}
    assert len(record.request_hash) == 32
    again = session_commit(workspace=workspace, identity=who, commit=commit, actor=actor)
    assert again == first and list(again) == list(first)


def test_a_record_keeps_an_answer_whole_when_its_rows_do_not_follow_one_another(workspace, actor):
    who = Identity(app="adk", user_id="u", key="s")
    session_commit(workspace=workspace, identity=who, actor=actor, commit=CommitIn(
        events=[{"type": "Message", "content": "a", "client_id": "a"}], create=True))
    commit = CommitIn(events=[{"type": "Message", "content": "b", "client_id": "b",
                               "occurred_at": "2026-01-01T12:00:00+02:00"},
                              {"type": "Message", "content": "a", "client_id": "a"}], batch_id="b1")
    first = session_commit(workspace=workspace, identity=who, commit=commit, actor=actor)
    assert [e["seq"] for e in first["events"]] == [2, 1]
    assert CommitRecord.objects.get(batch_id="b1").response["events"] == first["events"]
    assert session_commit(workspace=workspace, identity=who, commit=commit, actor=actor) == first


def test_a_last_part_replayed_with_other_content_is_refused_and_changes_nothing(thread, actor):
    first = sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=0,
                       items=[item("a", "one")], upload_id="u1", state={"n": 1})
    assert sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=0,
                      items=[item("a", "one")], upload_id="u1", state={"n": 1}) == {**first, "replayed": True}
    with pytest.raises(Conflict) as info:
        sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=0,
                   items=[item("a", "ONE")], upload_id="u1", state={"n": 1})
    assert info.value.code == "idempotency_conflict" and info.value.details == {"upload_id": "u1"}
    assert list(Event.objects.filter(thread=thread).values_list("content", flat=True)) == ["one"]


def test_the_stale_check_is_one_for_both_protocols(workspace, thread, actor):
    sync_apply(thread=thread, namespace="fw", actor=actor, state={"n": 1})
    with pytest.raises(StaleRevision) as sync_stale:
        sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=0, state={"n": 2})
    assert sync_stale.value.details == {"current_revision": 1, "base_revision": 0}
    who = Identity(app="adk", user_id="u", key="s")
    session_commit(workspace=workspace, identity=who, commit=CommitIn(create=True), actor=actor)
    with pytest.raises(StaleRevision) as history_stale:
        session_commit(workspace=workspace, identity=who, actor=actor, commit=CommitIn(
            events=[{"type": "Message", "content": "x"}], expected_last_seq=3))
    assert history_stale.value.code == "stale_history"
    assert history_stale.value.details == {"current_last_seq": 0, "expected_last_seq": 3}


def test_staged_parts_expire_with_the_answers(thread, actor, settings):
    settings.COMMIT_REPLAY_HOURS = 24
    staged = sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("a", "one")],
                        upload_id="up", part=0, parts=2)
    assert staged["status"] == "staged"
    sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("b", "two")], upload_id="done")
    CommitRecord.objects.filter(batch_id="up").update(created_at=timezone.now() - timedelta(hours=25))
    assert commit_records_prune() == {"batches": 1, "commit_records": 1}
    assert list(CommitRecord.objects.values_list("batch_id", flat=True)) == ["done"]
    with pytest.raises(Conflict, match="never arrived"):
        sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("c", "three")],
                   upload_id="up", part=1, parts=2)


def test_the_last_part_takes_the_staged_parts_and_keeps_the_answer_in_their_place(thread, actor):
    sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("a", "one")],
               upload_id="up", part=0, parts=2)
    done = sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("b", "two")],
                      upload_id="up", part=1, parts=2)
    record = CommitRecord.objects.get(batch_id="up")
    assert record.parts == {} and record.response == done and done["created"] == 2
    # an early part delivered again answers as the save did
    again = sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("a", "one")],
                       upload_id="up", part=0, parts=2)
    assert again == {"upload_id": "up", **done}


def test_a_sync_save_with_an_upload_id_reads_its_record_with_the_thread_lock(thread, actor):
    """The fast path: no read of the replay store of its own, no sweep; the record is inserted
    without a look first."""
    with CaptureQueriesContext(connection) as queries:
        sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("a", "one")],
                   upload_id="u1", base_revision=0)
    record_reads = [q["sql"] for q in queries.captured_queries if "commitrecord" in q["sql"]
                    and not q["sql"].lstrip().upper().startswith("INSERT")]
    assert len(record_reads) == 1 and record_reads[0].startswith('SELECT "contextstore_thread"'), record_reads
    if connection.vendor == "postgresql":
        assert "FOR NO KEY UPDATE" in record_reads[0]
    assert not any("DELETE" in q["sql"] and "commitrecord" in q["sql"] for q in queries.captured_queries)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_sync_save_that_waited_for_an_identical_one_replays_its_answer(workspace):
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL")
    from contextstore.services.sessions import session_ensure, thread_ensure

    actor = Actor.system("tests")
    session, _ = session_ensure(workspace=workspace, key="s", actor=actor)
    thread = thread_ensure(session=session, actor=actor)[0]
    save = dict(namespace="fw", actor=actor, base_revision=0, items=[item("a", "one")],
                upload_id="u1", state={"n": 1})
    first_open, answers, errors, waited = threading.Event(), {}, [], []

    def first() -> None:
        try:
            with transaction.atomic():  # the first save stays open (its lock held) until told
                answers["first"] = sync_apply(thread=thread, **save)
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
            answers["second"] = sync_apply(thread=thread, **save)
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
    assert waited == [True]
    # the stale base on the fast path sent it to the checked path, which found the answer
    assert answers["second"] == {**answers["first"], "replayed": True}
    assert Event.objects.filter(thread=thread).count() == 1
    assert Thread.objects.get(pk=thread.pk).revision == 1
    assert CommitRecord.objects.filter(response__isnull=False).count() == 1
