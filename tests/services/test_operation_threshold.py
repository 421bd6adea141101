"""One implementation of each long operation (clear, un-clear, collapse), run inline up to
LONG_OPERATION_EVENTS events and as a batched job above: the edge (n-1, n, n+1 events) decides
the path, and both paths leave the same rows."""

from typing import Any

import pytest
from django.forms.models import model_to_dict

from contextstore.models import Clear, Collapse, Event, Job, Thread
from contextstore.services import collapses, history, operations, threads
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.state import state_write
from tests.conftest import messages

LIMIT = 8  # LONG_OPERATION_EVENTS
BATCH = 3  # a 9-event job takes 3 full batches and an empty one, a 7-event one a partial last


@pytest.fixture(autouse=True)
def small_limits(settings, monkeypatch):
    settings.LONG_OPERATION_EVENTS = LIMIT
    monkeypatch.setattr(operations, "OPERATION_BATCH", BATCH)


def make_thread(workspace, actor, key: str, n: int) -> Thread:
    """n active events, one of them hidden (moved and counted as a row, not in the tokens)."""
    session = session_ensure(workspace=workspace, key=key, actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    events = messages(n, words=6)
    events[1]["visible"] = False
    event_append(thread=thread, actor=actor, events=events)
    state_write(thread=thread, summary="what came before", actor=actor)
    return Thread.objects.get(pk=thread.pk)


def snapshot(thread: Thread) -> dict[str, Any]:
    """Every row the operations write, with ids replaced by what they name and without the
    clock's columns."""
    thread = Thread.objects.get(pk=thread.pk)
    clears = list(Clear.objects.filter(thread=thread).order_by("pk"))
    collapses_ = list(Collapse.objects.filter(thread=thread).order_by("pk"))
    events = list(Event.objects.filter(thread=thread).order_by("seq"))
    seq_of = {e.pk: e.seq for e in events}
    clear_at = {c.pk: i for i, c in enumerate(clears)}
    collapse_at = {c.pk: i for i, c in enumerate(collapses_)}
    timeless = ("id", "thread", "created_at", "occurred_at", "undone_at")
    return {
        "events": [
            {**model_to_dict(e, exclude=[*timeless, "cleared_by", "collapse", "replaced_by"]),
             "cleared_by": clear_at.get(e.cleared_by_id), "collapse": collapse_at.get(e.collapse_id)}
            for e in events],
        "clears": [{**model_to_dict(c, exclude=timeless), "undone": c.undone_at is not None}
                   for c in clears],
        # A collapse done by a job names its job (Collapse.job); an inline one has none.
        "collapses": [{**model_to_dict(c, exclude=[*timeless, "job", "summary_event"]),
                       "summary_seq": seq_of[c.summary_event_id], "undone": c.undone_at is not None}
                      for c in collapses_],
        "thread": {f: getattr(thread, f) for f in (*history.THREAD_COUNTERS, "expired_seq",
                                                   "summary", "revision")
                   if f != "last_event_at"},
        "counted": history.counters_recount(session=thread.session)
        == history.counters_stored(session=thread.session),
    }


def clear(thread: Thread, actor, n: int) -> Clear | Job:
    return operations.clear_or_queue(thread=thread, actor=actor)


def unclear(thread: Thread, actor, n: int) -> Clear | Job:
    done = threads.thread_clear_context(thread=thread, actor=actor)
    assert done.event_count == n - 1  # what left the working context: the hidden one aside
    return operations.unclear_or_queue(clear=done, actor=actor)


def collapse(thread: Thread, actor, n: int) -> Collapse | Job:
    return operations.collapse_or_queue(thread=thread, start_position=1, end_position=n,
                                        summary_text="All of it.", actor=actor)


def inline(thread: Thread, actor, n: int, kind: str) -> None:
    """The same operation through the services the API calls, always inline."""
    if kind == "collapse":
        collapses.collapse_create(thread=thread, start_position=1, end_position=n,
                                  summary_text="All of it.", actor=actor, source="person")
        return
    done = threads.thread_clear_context(thread=thread, actor=actor)
    if kind == "unclear":
        threads.thread_unclear(clear=done, actor=actor)


@pytest.mark.parametrize("request_it", [clear, unclear, collapse], ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [LIMIT - 1, LIMIT, LIMIT + 1])
def test_up_to_the_limit_inline_above_it_a_job_with_the_same_rows(workspace, actor, request_it, n):
    kind = request_it.__name__
    asked, api = make_thread(workspace, actor, f"asked-{kind}", n), make_thread(workspace, actor,
                                                                               f"api-{kind}", n)
    done = request_it(asked, actor, n)
    if n <= LIMIT:
        assert not isinstance(done, Job) and not Job.objects.exists()
    else:
        assert isinstance(done, Job) and done.progress == {"done": 0, "total": n}
        # The request moved nothing: the hidden event aside, all active (or all cleared).
        assert Thread.objects.get(pk=asked.pk).active_event_count == (
            0 if kind == "unclear" else n - 1)
        job = operations.operation_job_run(job_id=done.pk)
        assert job is not None and job.status == Job.Status.DONE, job and job.error
        assert job.result["done"] == n and job.pending_key is None
    inline(api, actor, n, kind)
    assert snapshot(asked) == snapshot(api)
    assert snapshot(asked)["counted"]


def test_a_job_and_the_inline_path_leave_identical_rows_after_every_operation(workspace, actor,
                                                                              settings):
    settings.LONG_OPERATION_EVENTS = 0  # every request a job
    n = 4 * BATCH + 1
    queued, direct = make_thread(workspace, actor, "queued", n), make_thread(workspace, actor, "direct", n)

    def by_job(done: Any) -> Any:
        assert isinstance(done, Job)
        job = operations.operation_job_run(job_id=done.pk)
        assert job is not None and job.status == Job.Status.DONE, job and job.error
        return job.result

    # A collapse inside the range a clear then takes, then the clear's undo.
    by_job(collapse(queued, actor, 6))
    collapses.collapse_create(thread=direct, start_position=1, end_position=6,
                              summary_text="All of it.", actor=actor, source="person")
    assert snapshot(queued) == snapshot(direct)
    result = by_job(clear(queued, actor, n))
    cleared = threads.thread_clear_context(thread=direct, actor=actor)
    assert snapshot(queued) == snapshot(direct)
    assert result["done"] == cleared.event_count == n - 5  # the summary stands for six
    long_clear = Clear.objects.get(pk=result["clear"])
    result = by_job(operations.unclear_or_queue(clear=long_clear, actor=actor))
    restored = threads.thread_unclear(clear=cleared, actor=actor)
    assert (result["done"], result["summary_restored"]) == (restored.restored, restored.summary_restored)
    assert snapshot(queued) == snapshot(direct)
