"""Long clears, un-clears and collapses run as jobs in batches (services/operations.py): the
same rows as the synchronous services, progress that advances, appends made meanwhile kept,
and a failed job retried finishes without doing anything twice."""

import threading
import time

import pytest
from django.db import connection, transaction

from contextstore.errors import Conflict
from contextstore.models import Clear, Collapse, Event, Job, Thread
from contextstore.services import collapses, history, operations, threads
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.state import state_write
from tests.conftest import messages

EVENTS = 300
BATCH = 64


@pytest.fixture(autouse=True)
def small_limits(settings, monkeypatch):
    settings.LONG_OPERATION_EVENTS = 100
    monkeypatch.setattr(operations, "OPERATION_BATCH", BATCH)


def make_thread(workspace, actor, key: str) -> Thread:
    session = session_ensure(workspace=workspace, key=key, actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=messages(EVENTS, words=8))
    state_write(thread=thread, summary="what came before", actor=actor)
    return Thread.objects.get(pk=thread.pk)


def rows(thread: Thread) -> list[tuple]:
    """Each event as the working context sees it (ids replaced by what they point to)."""
    return [(e.seq, e.position, e.type, e.content, e.status, e.cleared_by_id is not None,
             e.collapse_id is not None)
            for e in Event.objects.filter(thread=thread).order_by("seq")]


def state(thread: Thread) -> tuple:
    thread = Thread.objects.get(pk=thread.pk)
    counted = history.counters_recount(session=thread.session) == history.counters_stored(
        session=thread.session)
    return (rows(thread), thread.active_event_count, thread.active_tokens, thread.event_count,
            thread.summary, counted)


def run(job: Job) -> Job:
    done = operations.operation_job_run(job_id=job.pk)
    assert done is not None and done.status == Job.Status.DONE, done and done.error
    return done


def test_a_long_clear_unclear_and_collapse_match_the_synchronous_path(workspace, actor):
    sync, queued = make_thread(workspace, actor, "sync"), make_thread(workspace, actor, "queued")

    clear = threads.thread_clear_context(thread=sync, actor=actor)
    job = operations.clear_or_queue(thread=queued, actor=actor)
    assert isinstance(job, Job) and job.kind == "clear" and job.progress == {"done": 0, "total": EVENTS}
    assert Job.objects.get(pk=job.pk).status == "queued"
    job = run(job)
    assert state(queued) == state(sync)
    long_clear = Clear.objects.get(pk=job.result["clear"])
    assert (long_clear.event_count, long_clear.tokens, long_clear.summary) == (
        clear.event_count, clear.tokens, clear.summary)
    assert job.result["done"] == EVENTS == job.result["total"]

    threads.thread_unclear(clear=clear, actor=actor)
    job = run(operations.unclear_or_queue(clear=long_clear, actor=actor))
    assert state(queued) == state(sync) and job.result["summary_restored"] is True
    assert Clear.objects.get(pk=long_clear.pk).undone_at is not None

    collapse = collapses.collapse_create(thread=sync, start_position=20, end_position=250,
                                         summary_text="The middle.", actor=actor, source="person")
    job = run(operations.collapse_or_queue(thread=queued, start_position=20, end_position=250,
                                           summary_text="The middle.", actor=actor))
    assert state(queued) == state(sync)
    long_collapse = Collapse.objects.get(pk=job.result["collapse"])
    assert (long_collapse.event_count, long_collapse.tokens_before, long_collapse.tokens_after,
            long_collapse.start_position, long_collapse.end_position) == (
        collapse.event_count, collapse.tokens_before, collapse.tokens_after, 20, 250)

    # The long collapse is undone as any other.
    collapses.collapse_undo(collapse=collapse, actor=actor)
    collapses.collapse_undo(collapse=long_collapse, actor=actor)
    assert state(queued) == state(sync)


def test_small_operations_stay_synchronous(workspace, actor, settings):
    settings.LONG_OPERATION_EVENTS = EVENTS
    thread = make_thread(workspace, actor, "small")
    clear = operations.clear_or_queue(thread=thread, actor=actor)
    assert isinstance(clear, Clear) and clear.event_count == EVENTS
    assert isinstance(operations.unclear_or_queue(clear=clear, actor=actor), Clear)
    assert isinstance(operations.collapse_or_queue(thread=thread, start_position=1, end_position=50,
                                                   summary_text="s", actor=actor), Collapse)
    assert not Job.objects.exists()


def test_progress_advances_batch_by_batch(workspace, actor, monkeypatch):
    thread = make_thread(workspace, actor, "progress")
    seen = []
    step = operations.STEPS["collapse"]

    def watched(job, locked, progress, who):
        finished = step(job, locked, progress, who)
        seen.append(progress["done"])
        return finished

    monkeypatch.setitem(operations.STEPS, "collapse", watched)
    job = run(operations.collapse_or_queue(thread=thread, start_position=1, end_position=EVENTS,
                                           summary_text="All of it.", actor=actor))
    assert seen == [64, 128, 192, 256, 300] and job.result["total"] == EVENTS


def test_while_a_long_operation_is_pending_others_wait_but_appends_go_on(workspace, actor):
    thread = make_thread(workspace, actor, "pending")
    job = operations.clear_or_queue(thread=thread, actor=actor)
    with pytest.raises(Conflict):
        operations.clear_or_queue(thread=thread, actor=actor)
    with pytest.raises(Conflict):
        threads.thread_clear_context(thread=thread, actor=actor)
    with pytest.raises(Conflict):
        collapses.collapse_create(thread=thread, start_position=1, end_position=5,
                                  summary_text="s", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(3, start=EVENTS))  # after the click
    run(job)
    assert Event.objects.filter(thread=thread, status="active").count() == 3
    assert Thread.objects.get(pk=thread.pk).active_event_count == 3


def test_a_failed_job_retried_finishes_once(workspace, actor, monkeypatch):
    sync, queued = make_thread(workspace, actor, "sync"), make_thread(workspace, actor, "queued")
    threads.thread_clear_context(thread=sync, actor=actor)
    step, calls = operations.STEPS["clear"], []

    def failing(job, locked, progress, who):
        calls.append(1)
        if len(calls) == 3:
            raise Conflict("The database went away.")
        return step(job, locked, progress, who)

    monkeypatch.setitem(operations.STEPS, "clear", failing)
    job = operations.operation_job_run(job_id=operations.clear_or_queue(thread=queued, actor=actor).pk)
    assert job.status == "failed" and job.progress["done"] == 2 * BATCH and job.pending_key is None
    assert "went away" in job.error
    assert Event.objects.filter(thread=queued, status="cleared").count() == 2 * BATCH

    job = operations.operation_job_retry(job=job, actor=actor)
    assert job.status == "queued" and job.attempts == 0  # a retry is not a crash loop
    job = run(job)
    assert state(queued) == state(sync)
    assert Clear.objects.filter(thread=queued).count() == 1
    assert run_again_is_harmless(job)


def run_again_is_harmless(job: Job) -> bool:
    before = rows(job.thread)
    again = operations.operation_job_run(job_id=job.pk)  # a redelivered message
    return again is not None and again.status == "done" and rows(job.thread) == before


@pytest.mark.django_db(transaction=True)
def test_appends_made_while_the_job_runs_are_kept(workspace, actor, monkeypatch):
    thread = make_thread(workspace, actor, "writer")
    job = operations.clear_or_queue(thread=thread, actor=actor)
    upto = job.params["upto_seq"]

    class Pausing:  # each batch's transaction starts a little later: room for the writer
        on_commit = staticmethod(transaction.on_commit)

        @staticmethod
        def atomic(*args, **kwargs):
            time.sleep(0.05)
            return transaction.atomic(*args, **kwargs)

    monkeypatch.setattr(operations, "transaction", Pausing)
    errors, seen = [], []

    def writer() -> None:
        try:
            jobs = Job.objects.filter(pk=job.pk).values_list("status", flat=True)
            for _ in range(200):  # until the worker has taken the job
                if jobs.first() == "running":
                    break
                time.sleep(0.01)
            for i in range(5):
                event_append(thread=Thread.objects.get(pk=thread.pk), actor=Actor.worker("writer"),
                             events=messages(2, start=1000 + 2 * i, words=4))
                seen.append(jobs.first())
                time.sleep(0.01)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    other = threading.Thread(target=writer)
    other.start()
    run(job)
    other.join(30)
    assert errors == [] and "running" in seen, seen  # appended while the job was running
    after = Event.objects.filter(thread=thread, seq__gt=upto)
    assert after.count() == 10 and set(after.values_list("status", flat=True)) == {"active"}
    assert Event.objects.filter(thread=thread, seq__lte=upto, status="active").count() == 0
    fresh = Thread.objects.get(pk=thread.pk)
    assert fresh.active_event_count == 10 and fresh.event_count == EVENTS + 10
    assert history.counters_recount(session=fresh.session) == history.counters_stored(
        session=fresh.session)


def test_a_summary_job_meeting_a_long_operation_waits_for_it(workspace, actor):
    from contextstore.services.summaries import summarize_range_request, summary_job_run

    thread = make_thread(workspace, actor, "summary")
    summary = summarize_range_request(thread=thread, start_position=250, end_position=260, actor=actor)
    long_job = operations.collapse_or_queue(thread=thread, start_position=1, end_position=200,
                                            summary_text="The start.", actor=actor)
    assert summary_job_run(job_id=summary.pk).status == "queued"  # back in line, nothing done
    assert Collapse.objects.count() == 0
    run(long_job)
    assert summary_job_run(job_id=summary.pk).status == "done"  # what the recovery's resend does
    assert Collapse.objects.count() == 2
