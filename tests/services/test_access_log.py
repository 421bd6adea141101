"""Who looked at what (services/access_log): at most one row per (actor, action, object, hour),
race-free on both databases, and a per-process memory that skips the statement."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections, transaction

from contextstore.models import ReadAudit, Thread
from contextstore.selectors.sessions import session_viewers
from contextstore.services import access_log
from contextstore.services.access_log import Action, record_read
from contextstore.services.common import Actor
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.processes import FORK, run_forked

NOON = datetime(2026, 12, 3, 12, 5, tzinfo=UTC)


def _read(actor, thread, now=NOON, action=Action.CONTEXT_READ):
    return record_read(actor=actor, action=action, target=thread, workspace_id=thread.workspace_id,
                       session_id=thread.session_id, now=now)


def test_two_reads_in_one_hour_are_one_row_and_the_next_hour_another(thread, token):
    actor = Actor.for_token(token[0], ip="10.0.0.7")
    _read(actor, thread)
    _read(actor, thread, now=NOON + timedelta(minutes=50))  # 12:55, the same hour
    assert ReadAudit.objects.count() == 1
    row = ReadAudit.objects.get()
    assert (row.hour, row.first_at) == (NOON.replace(minute=0), NOON)
    assert (row.actor_type, row.actor_token, row.actor_label, row.ip) == (
        "token", token[0], f"token:{token[0].prefix}", "10.0.0.7")
    assert (row.target_type, row.target_id, row.session_id, row.workspace_id) == (
        "thread", str(thread.pk), thread.session_id, thread.workspace_id)
    _read(actor, thread, now=NOON + timedelta(minutes=55))  # 13:00
    assert list(ReadAudit.objects.order_by("hour").values_list("hour", flat=True)) == [
        NOON.replace(minute=0), NOON.replace(hour=13, minute=0)]


def test_each_actor_action_and_object_has_its_own_row(thread, session, token, read_token, user):
    for actor in (Actor.for_token(token[0]), Actor.for_token(read_token[0]), Actor.for_user(user)):
        _read(actor, thread)
        _read(actor, thread, action=Action.EXPORT)
    record_read(actor=Actor.for_user(user), action=Action.SESSION_VIEW, target=session,
                workspace_id=session.workspace_id, session_id=session.pk, now=NOON)
    assert ReadAudit.objects.count() == 7
    assert ReadAudit.objects.filter(actor_user=user).count() == 3


def test_a_remembered_read_takes_no_statement(thread, token, django_assert_num_queries,
                                              django_capture_on_commit_callbacks):
    actor = Actor.for_token(token[0])
    with django_capture_on_commit_callbacks(execute=True), django_assert_num_queries(1):
        assert _read(actor, thread) is True
    with django_assert_num_queries(0):
        assert _read(actor, thread, now=NOON + timedelta(minutes=30)) is False
    with django_assert_num_queries(1):  # a new hour is a new key
        assert _read(actor, thread, now=NOON + timedelta(hours=1)) is True


def test_a_read_rolled_back_is_not_remembered(thread, token, django_assert_num_queries):
    actor = Actor.for_token(token[0])
    with pytest.raises(RuntimeError), transaction.atomic():
        _read(actor, thread)
        raise RuntimeError("the request failed")
    assert not ReadAudit.objects.exists()
    with django_assert_num_queries(1):  # written again, not skipped
        _read(actor, thread)
    assert ReadAudit.objects.count() == 1


def test_the_memory_is_bounded(thread, token, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(access_log, "SEEN_MAX", 3)
    actor = Actor.for_token(token[0])
    with django_capture_on_commit_callbacks(execute=True):
        for hour in range(5):
            _read(actor, thread, now=NOON + timedelta(hours=hour))
    assert len(access_log._seen) == 3
    assert ReadAudit.objects.count() == 5


def test_the_panel_lists_who_read_the_session_and_its_threads_only(
        workspace, other_workspace, session, thread, actor, token):
    pat = get_user_model().objects.create_user("pat <b>", password="pw-for-tests-123")
    for hour in (0, 1, 3):
        _read(Actor.for_user(pat), thread, now=NOON + timedelta(hours=hour), action=Action.THREAD_VIEW)
    _read(Actor.for_token(token[0]), thread, now=NOON + timedelta(hours=2))
    # another workspace's session and thread, read by the same person: never on this panel
    rival = session_ensure(workspace=other_workspace, key="r", actor=actor)[0]
    rival_thread = thread_ensure(session=rival, actor=actor)[0]
    _read(Actor.for_user(pat), rival_thread, now=NOON + timedelta(hours=5))
    viewers = session_viewers(session=session)
    assert [(v["actor_label"], v["action"], v["hours"]) for v in viewers] == [
        ("pat <b>", "thread.view", 3), (f"token:{token[0].prefix}", "context.read", 1)]
    assert viewers[0]["last_at"] == NOON + timedelta(hours=3)
    assert viewers[0]["what"] == "thread page"
    assert [v["hours"] for v in session_viewers(session=rival)] == [1]


# -- concurrency: readers at once leave one row and no error, on both databases

@pytest.mark.django_db(transaction=True)
def test_readers_in_threads_at_once_leave_one_row(thread, token):
    actor = Actor.for_token(token[0])
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def read() -> None:
        try:
            start.wait()
            _read(actor, thread)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=read) for _ in range(6)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert not errors
    assert ReadAudit.objects.count() == 1


def _reader(thread_pk: int, token_pk: int, now: datetime, barrier) -> None:
    from contextstore.models import ApiToken

    connections.close_all()  # the child opens its own connection
    access_log.forget_seen()
    thread = Thread.objects.get(pk=thread_pk)
    actor = Actor.for_token(ApiToken.objects.get(pk=token_pk))
    barrier.wait()
    for _ in range(20):
        _read(actor, thread, now=now)
    connections.close_all()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_readers_in_processes_at_once_leave_one_row(thread, token):
    if connection.vendor != "postgresql":
        pytest.skip("the multi-process test runs against PostgreSQL")
    barrier = FORK.Barrier(4)
    run_forked(_reader, [(thread.pk, token[0].pk, NOON, barrier)] * 4, timeout=60)
    assert ReadAudit.objects.count() == 1
