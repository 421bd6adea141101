"""A long clear and its un-clear done by a real Celery worker process, in batches, and a job
whose message was lost sent again by beat's recovery."""

import pytest

from contextstore.models import Clear, Event, Job, Thread
from contextstore.services import operations, summaries
from contextstore.services.events import event_append
from tests.conftest import messages
from tests.worker.conftest import wait_for

pytestmark = pytest.mark.worker


def test_a_worker_does_a_long_clear_and_its_unclear_in_batches(make_worker, thread, actor, settings):
    settings.LONG_OPERATION_EVENTS = 50  # the request's side; the worker takes any queued job
    event_append(thread=thread, events=messages(120, words=6), actor=actor)
    job = operations.clear_or_queue(thread=thread, actor=actor)
    assert isinstance(job, Job)
    make_worker().start()  # after the request: its message waits in the queue for the worker
    wait_for(lambda: Job.objects.get(pk=job.pk).status == "done", what="the clear job")
    clear = Clear.objects.get(thread=thread)
    assert clear.event_count == 120 and Thread.objects.get(pk=thread.pk).active_event_count == 0
    assert set(Event.objects.filter(thread=thread).values_list("status", flat=True)) == {"cleared"}

    job = operations.unclear_or_queue(clear=clear, actor=actor)
    wait_for(lambda: Job.objects.get(pk=job.pk).status == "done", what="the un-clear job")
    assert Thread.objects.get(pk=thread.pk).active_event_count == 120
    assert Job.objects.get(pk=job.pk).result["done"] == 120

    # A message lost on the way (queued, never delivered): beat's recovery sends it again.
    Job.objects.filter(pk=job.pk).update(status="queued", pending_key=None)
    assert summaries.summary_jobs_recover(stale_after=0)["resent"] == 1
    wait_for(lambda: Job.objects.get(pk=job.pk).status == "done", what="the resent job")
    assert Thread.objects.get(pk=thread.pk).active_event_count == 120  # nothing done twice
