"""Long clears, un-clears and collapses on the page: queued as jobs, their progress in the
dock (also on a revisit), the usual confirmation with Undo when done, failures with Retry."""

import pytest

from contextstore.errors import Conflict
from contextstore.models import Clear, Collapse, Job
from contextstore.services import operations
from contextstore.services.events import event_append
from tests.conftest import messages
from tests.views.conftest import HTMX


@pytest.fixture(autouse=True)
def small_limits(settings, monkeypatch, thread, actor):
    settings.LONG_OPERATION_EVENTS = 20
    monkeypatch.setattr(operations, "OPERATION_BATCH", 10)
    event_append(thread=thread, events=messages(45, words=6), actor=actor)


def page(client, thread) -> str:
    return client.get(f"/threads/{thread.pk}/").content.decode()


def test_a_long_clear_shows_progress_then_offers_undo_and_its_unclear_too(editor_client, thread):
    response = editor_client.post(f"/threads/{thread.pk}/clear/")
    assert response.status_code == 302 and response["Location"] == f"/threads/{thread.pk}/"
    job = Job.objects.get(kind="clear")
    html = page(editor_client, thread)  # the dock shows it, polling, on every visit
    assert "Clear of 45 events queued for the worker" in html and f'id="job-{job.pk}"' in html
    assert "Cleared 45 events" not in html

    Job.objects.filter(pk=job.pk).update(status="running", progress={"done": 20, "total": 45})
    html = editor_client.get(f"/jobs/{job.pk}/", **HTMX).content.decode()
    assert "20 of 45 events" in html and 'value="20"' in html and "every 1s" in html
    Job.objects.filter(pk=job.pk).update(status="queued")
    assert operations.operation_job_run(job_id=job.pk).status == "done"
    response = editor_client.get(f"/jobs/{job.pk}/", **HTMX)
    assert response["HX-Refresh"] == "true" and "every 1s" not in response.content.decode()
    html = page(editor_client, thread)
    clear = Clear.objects.get()
    assert "Cleared 45 events" in html and f"/threads/{thread.pk}/clears/{clear.pk}/undo/" in html

    editor_client.post(f"/threads/{thread.pk}/clears/{clear.pk}/undo/")
    job = Job.objects.get(kind="unclear")
    operations.operation_job_run(job_id=job.pk)
    editor_client.get(f"/jobs/{job.pk}/", **HTMX)
    assert "Un-cleared: 45 events are back" in page(editor_client, thread)


def test_a_long_collapse_and_a_failure_with_retry(editor_client, thread, monkeypatch):
    url = f"/threads/{thread.pk}/collapse/"
    editor_client.post(url, {"start_position": 2, "end_position": 40, "summary": "Most of it."})
    job = Job.objects.get(kind="collapse")
    assert "positions #2–#40" in page(editor_client, thread)
    # A second long operation waits for the first: said, nothing changed.
    response = editor_client.post(url, {"start_position": 2, "end_position": 40, "summary": "x"}, **HTMX)
    assert response.status_code == 409 and Job.objects.count() == 1

    step = operations.STEPS["collapse"]
    calls = []

    def failing(*args):
        calls.append(1)
        if len(calls) == 2:
            raise Conflict("Something broke.")
        return step(*args)

    monkeypatch.setitem(operations.STEPS, "collapse", failing)
    operations.operation_job_run(job_id=job.pk)
    html = editor_client.get(f"/jobs/{job.pk}/", **HTMX).content.decode()
    assert "The collapse failed after 10 of 39 events: Something broke." in html and ">Retry<" in html
    response = editor_client.post(f"/threads/{thread.pk}/jobs/{job.pk}/retry/", **HTMX)
    assert "Collapse of 39 events queued" in response.content.decode()
    monkeypatch.setitem(operations.STEPS, "collapse", step)
    operations.operation_job_run(job_id=job.pk)
    editor_client.get(f"/jobs/{job.pk}/", **HTMX)
    collapse = Collapse.objects.get()
    assert collapse.event_count == 39
    assert f"/threads/{thread.pk}/collapses/{collapse.pk}/undo/" in page(editor_client, thread)


def test_small_operations_are_done_in_the_request(editor_client, thread):
    editor_client.post(f"/threads/{thread.pk}/collapse/",
                       {"start_position": 2, "end_position": 10, "summary": "A bit."})
    assert Collapse.objects.count() == 1 and not Job.objects.exists()
    assert "Collapsed 9 events" in page(editor_client, thread)
