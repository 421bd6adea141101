"""Retention: the policy a session gets, events and inactive sessions deleted in audited bounded
batches, legal holds, resuming after a crash, and the record kept consistent around the gaps."""

from datetime import timedelta

import pytest
from django.db import connection, connections
from django.db.models import Subquery
from django.utils import timezone

from contextstore.errors import Conflict, InvalidInput
from contextstore.models import AuditLog, Collapse, Event, Session, SessionModel, Thread
from contextstore.retentionspec import check_days
from contextstore.selectors import rendering, renders
from contextstore.services import history, retention
from contextstore.services import renders as render_service
from contextstore.services.collapses import collapse_create, collapse_undo
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.memories import memory_remember
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.threads import thread_fork
from tests.processes import forked
from tests.services.test_history_counters import assert_counters_match

DAY = timedelta(days=1)


def _age(thread: Thread, *, upto_seq: int, days: int) -> None:
    """Make the thread's rows up to a seq look written `days` ago."""
    Event.objects.filter(thread=thread, seq__lte=upto_seq).update(
        created_at=timezone.now() - days * DAY)
    _newest_follows(thread)


def _newest_follows(thread: Thread) -> None:
    """The thread's newest-row time follows rows backdated, as if they had been written then."""
    Thread.objects.filter(pk=thread.pk).update(last_event_at=Subquery(
        Event.objects.filter(thread=thread).order_by("-created_at").values("created_at")[:1]))


def _append(thread: Thread, n: int, actor, **extra) -> list[Event]:
    return event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": f"turn {i}", **extra} for i in range(n)]).events


def test_the_policy_is_the_sessions_override_else_the_workspaces_else_none(workspace, session, actor):
    assert retention.policy_of(session) == retention.Policy()
    assert not retention.policy_of(session).applies
    retention.retention_policy_set(target=workspace, actor=actor, event_days=30, session_days=90)
    session.refresh_from_db()
    assert retention.policy_of(session) == retention.Policy(event_days=30, session_days=90)
    retention.retention_policy_set(target=session, actor=actor, event_days=7)
    assert retention.policy_of(session) == retention.Policy(event_days=7, session_days=90)
    assert retention.session_expires_at(session) == session.last_activity_at + 90 * DAY
    retention.retention_policy_set(target=session, actor=actor, legal_hold=True)
    assert retention.policy_of(session) == retention.Policy(legal_hold=True)
    assert retention.session_expires_at(session) is None
    assert AuditLog.objects.filter(action="retention.policy").count() == 3


def test_a_policy_is_a_number_of_days():
    # retentionspec, the doors' (the API's and the admin's: tests/api/test_retention_api.py)
    for bad in (0, -1, "7", 1.5, True, 36501):
        with pytest.raises(InvalidInput):
            check_days("retention_event_days", bad)
    assert (check_days("d", None), check_days("d", 1), check_days("d", 36500)) == (None, 1, 36500)


def test_old_events_go_in_several_audited_batches_and_counters_follow(workspace, session, thread, actor):
    retention.retention_policy_set(target=workspace, actor=actor, event_days=30)
    _append(thread, 25, actor)
    _age(thread, upto_seq=20, days=31)
    done = retention.retention_run(batch_size=8)
    assert done == {"batches": 3, "events": 20, "sessions": 0, "store_versions": 0}
    assert list(Event.objects.filter(thread=thread).order_by("seq").values_list("seq", flat=True)) == \
        list(range(21, 26))
    rows = list(AuditLog.objects.filter(action="retention.events_delete").order_by("pk"))
    assert [(r.details["events"], r.details["first_seq"], r.details["last_seq"]) for r in rows] == \
        [(8, 1, 8), (8, 9, 16), (4, 17, 20)]
    assert all(r.target_id == str(thread.pk) and r.workspace_id == workspace.pk for r in rows)
    thread.refresh_from_db()
    assert (thread.event_count, thread.last_seq, thread.expired_seq) == (5, 25, 20)
    assert_counters_match(session)
    # seq goes on after the gap, never reused
    assert _append(thread, 1, actor)[0].seq == 26
    assert retention.retention_run(batch_size=8) == {"batches": 0, "events": 0, "sessions": 0,
                                                      "store_versions": 0}


def test_inactive_sessions_go_whole_and_active_ones_stay(workspace, session, thread, actor):
    retention.retention_policy_set(target=workspace, actor=actor, session_days=10)
    _append(thread, 12, actor)
    other = thread_ensure(session=session, name="side", actor=actor)[0]
    _append(other, 3, actor)
    active = session_ensure(workspace=workspace, key="busy", actor=actor)[0]
    _append(thread_ensure(session=active, actor=actor)[0], 2, actor)
    Session.objects.filter(pk=session.pk).update(last_activity_at=timezone.now() - 11 * DAY)
    done = retention.retention_run(batch_size=5)
    # 3 + 1 batches, then the rest
    assert done == {"batches": 5, "events": 15, "sessions": 1, "store_versions": 0}
    assert not Session.objects.filter(pk=session.pk).exists()
    assert Session.objects.filter(pk=active.pk).exists()
    assert AuditLog.objects.get(action="retention.session_delete").target_id == str(session.pk)


def test_a_legal_hold_exempts_a_session_from_both_rules(workspace, session, thread, actor):
    retention.retention_policy_set(target=workspace, actor=actor, event_days=1, session_days=1)
    retention.retention_policy_set(target=session, actor=actor, legal_hold=True)
    _append(thread, 4, actor)
    _age(thread, upto_seq=4, days=5)
    Session.objects.filter(pk=session.pk).update(last_activity_at=timezone.now() - 5 * DAY)
    assert retention.retention_run() == {"batches": 0, "events": 0, "sessions": 0, "store_versions": 0}
    assert Event.objects.filter(thread=thread).count() == 4


def test_a_crash_between_or_inside_batches_leaves_a_consistent_record_and_the_next_run_goes_on(
    workspace, session, thread, actor, monkeypatch
):
    retention.retention_policy_set(target=workspace, actor=actor, event_days=30)
    _append(thread, 12, actor)
    _age(thread, upto_seq=12, days=40)
    # The run stops after one batch (a worker killed between batches).
    assert retention.retention_run(batch_size=5, max_batches=1)["events"] == 5
    assert_counters_match(session)
    # A crash inside a batch rolls the whole batch back.
    real = history.history_removed

    def crash(**kwargs):
        real(**kwargs)
        raise RuntimeError("worker died")

    monkeypatch.setattr(history, "history_removed", crash)
    with pytest.raises(RuntimeError):
        retention.retention_run(batch_size=5)
    assert Event.objects.filter(thread=thread).count() == 7
    assert_counters_match(session)
    monkeypatch.setattr(history, "history_removed", real)
    assert retention.retention_run(batch_size=5)["events"] == 7
    assert_counters_match(session)
    assert AuditLog.objects.filter(action="retention.events_delete").count() == 3


def test_counters_runs_models_and_errors_equal_a_recount_after_retention(workspace, session, thread, actor):
    retention.retention_policy_set(target=workspace, actor=actor, event_days=30)
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMComplete", "run_id": "r1", "content": "done",
         "data": {"input_tokens": 10, "output_tokens": 3, "cost": "0.25", "model": "old-model"}},
        {"type": "Error", "content": "boom"},
        {"type": "LLMComplete", "run_id": "r1", "content": "done",
         "data": {"input_tokens": 5, "output_tokens": 1, "cost": "0.5", "model": "new-model"}},
    ])
    _age(thread, upto_seq=2, days=31)
    retention.retention_run(batch_size=1)
    assert_counters_match(session)
    assert set(SessionModel.objects.filter(session=session).values_list("model", flat=True)) == {"new-model"}
    session.refresh_from_db()
    assert (session.error_count, str(session.cost_total)) == (0, "0.500000")


def test_collapses_memories_and_renders_say_their_history_expired(workspace, session, thread, actor):
    retention.retention_policy_set(target=workspace, actor=actor, event_days=30)
    _append(thread, 6, actor)
    kept = collapse_create(thread=thread, start_position=2, end_position=3, summary_text="s1",
                           actor=actor)
    gone = collapse_create(thread=thread, start_position=1, end_position=1, summary_text="s0",
                           actor=actor)
    first = Event.objects.get(thread=thread, seq=1)
    memory = memory_remember(workspace=workspace, user_id="alice", content="likes tea",
                             source_event=first, actor=actor)[0]
    record = renders_record(thread, actor)
    # Everything up to seq 6 is old (the originals, not the summaries made at seq 7 and 8) but
    # the second summary (seq 8) also goes: its collapse with it.
    _age(thread, upto_seq=6, days=31)
    Event.objects.filter(pk=gone.summary_event_id).update(created_at=timezone.now() - 31 * DAY)
    _newest_follows(thread)
    retention.retention_run(batch_size=3)
    assert not Collapse.objects.filter(pk=gone.pk).exists()
    kept.refresh_from_db()
    assert kept.expired_count == 2
    with pytest.raises(Conflict) as refused:
        collapse_undo(collapse=kept, actor=actor)
    assert refused.value.code == "originals_expired"
    memory.refresh_from_db()
    assert (memory.content, memory.source_event_id, memory.source_expired) == ("likes tea", None, True)
    assert renders.render_expired(record) > 0
    renders.render_rebuild(record=record)  # rebuilds what is left, no error
    assert_counters_match(session)


def renders_record(thread: Thread, actor):
    thread.refresh_from_db()
    rendered = rendering.render(thread=thread, max_tokens=10_000)
    return render_service.render_record(thread=thread, rendered=rendered, actor=actor)


def _writer(thread_pk: int, n: int) -> None:
    connections.close_all()
    thread = Thread.objects.get(pk=thread_pk)
    for i in range(n):
        event_append(thread=thread, actor=Actor.worker("writer"), events=[
            {"type": "Message", "content": f"new {i}", "client_id": f"new-{i}"}])
    connections.close_all()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_writer_appending_while_retention_runs_loses_nothing(workspace, session, thread, actor):
    if connection.vendor != "postgresql":
        pytest.skip("the second process runs against PostgreSQL")
    retention.retention_policy_set(target=workspace, actor=actor, event_days=30)
    _append(thread, 300, actor)
    _age(thread, upto_seq=300, days=31)
    with forked(_writer, [(thread.pk, 60)]):
        retention.retention_run(batch_size=7)
    retention.retention_run(batch_size=7)
    contents = list(Event.objects.filter(thread=thread).order_by("seq").values_list("content", flat=True))
    assert contents == [f"new {i}" for i in range(60)]
    seqs = list(Event.objects.filter(thread=thread).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(301, 361))
    assert_counters_match(Session.objects.get(pk=session.pk))


def test_beat_runs_retention_through_its_task(workspace, session, thread, actor, settings):
    from contextstore import tasks

    assert settings.CELERY_BEAT_SCHEDULE["apply-retention"]["task"] == "contextstore.tasks.apply_retention"
    retention.retention_policy_set(target=workspace, actor=actor, event_days=30)
    _append(thread, 3, actor)
    _age(thread, upto_seq=2, days=31)
    assert tasks.apply_retention() == {"batches": 1, "events": 2, "sessions": 0, "store_versions": 0}


def _expire_originals(workspace, thread, actor, *, upto_seq: int) -> None:
    """Retention deletes the thread's rows up to a seq (a collapse's originals, not its summary)."""
    retention.retention_policy_set(target=workspace, actor=actor, event_days=30)
    _age(thread, upto_seq=upto_seq, days=31)
    retention.retention_run(batch_size=3)
    thread.refresh_from_db()


def test_undo_of_a_collapse_whose_originals_expired_is_refused_and_changes_nothing(
        workspace, session, thread, actor):
    _append(thread, 6, actor)
    collapse = collapse_create(thread=thread, start_position=2, end_position=4, summary_text="s",
                               actor=actor)
    _expire_originals(workspace, thread, actor, upto_seq=2)
    before = list(Event.objects.filter(thread=thread).order_by("seq").values_list("seq", "status"))
    with pytest.raises(Conflict) as refused:
        collapse_undo(collapse=collapse, actor=actor)
    assert (refused.value.code, refused.value.details) == ("originals_expired", {"expired": 1})
    collapse.refresh_from_db()
    assert collapse.undone_at is None
    assert list(Event.objects.filter(thread=thread).order_by("seq")
                .values_list("seq", "status")) == before
    assert_counters_match(session)


def test_a_fork_over_a_collapse_whose_originals_all_expired_copies_its_summary(
        workspace, session, thread, actor):
    _append(thread, 6, actor)
    collapse = collapse_create(thread=thread, start_position=1, end_position=3, summary_text="s",
                               actor=actor)
    _expire_originals(workspace, thread, actor, upto_seq=3)
    assert Collapse.objects.get(pk=collapse.pk).expired_count == 3
    child = thread_fork(thread=thread, name="fork", actor=actor)
    rows = list(Event.objects.filter(thread=child).order_by("position", "seq")
                .values_list("position", "type", "status", "content"))
    assert rows == [(1, "Summary", "active", "s")] + [
        (i, "Message", "active", f"turn {i + 1}") for i in range(2, 5)]
    copy = Collapse.objects.get(thread=child)
    assert (copy.start_position, copy.end_position, copy.event_count, copy.expired_count) == (1, 1, 3, 3)
    with pytest.raises(Conflict) as refused:
        collapse_undo(collapse=copy, actor=actor)
    assert refused.value.code == "originals_expired"
    assert_counters_match(session)


def test_a_fork_over_a_partly_expired_collapse_copies_the_originals_left(
        workspace, session, thread, actor):
    _append(thread, 6, actor)
    collapse_create(thread=thread, start_position=2, end_position=4, summary_text="s", actor=actor)
    _expire_originals(workspace, thread, actor, upto_seq=2)
    child = thread_fork(thread=thread, name="fork", actor=actor)
    rows = list(Event.objects.filter(thread=child).order_by("seq")
                .values_list("seq", "position", "type", "status"))
    assert rows == [(1, 1, "Message", "collapsed"), (2, 2, "Message", "collapsed"),
                    (3, 3, "Message", "active"), (4, 4, "Message", "active"),
                    (5, 1, "Summary", "active")]
    copy = Collapse.objects.get(thread=child)
    assert (copy.start_position, copy.end_position, copy.event_count, copy.expired_count) == (1, 2, 3, 1)
    assert Event.objects.filter(collapse=copy).count() == 2
    with pytest.raises(Conflict):
        collapse_undo(collapse=copy, actor=actor)
    assert_counters_match(session)
