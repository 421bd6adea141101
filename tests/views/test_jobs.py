"""Summary jobs on the page: how long they wait, that no worker took them, and Cancel."""

from datetime import timedelta

import pytest
from django.utils import timezone

from contextstore.models import AuditLog, Collapse, Job
from contextstore.services.events import event_append
from contextstore.services.summaries import summary_job_run
from tests.conftest import messages
from tests.views.conftest import HTMX


@pytest.fixture
def job(editor_client, thread, actor) -> Job:
    event_append(thread=thread, events=messages(10), actor=actor)
    editor_client.post(f"/threads/{thread.pk}/summarize/", {"start_position": 2, "end_position": 5}, **HTMX)
    return Job.objects.get()


def test_a_queued_job_says_when_no_worker_took_it_and_can_be_cancelled(editor_client, thread, job):
    html = editor_client.get(f"/jobs/{job.pk}/", **HTMX).content.decode()
    assert "waiting 0 s" in html and "No worker has taken it" not in html and ">Cancel</button>" in html
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(seconds=40))
    html = editor_client.get(f"/jobs/{job.pk}/", **HTMX).content.decode()
    assert "No worker has taken it yet" in html and "waiting 40 s" in html
    response = editor_client.post(f"/threads/{thread.pk}/jobs/{job.pk}/cancel/", **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "Cancelled by eddie before a worker took it." in html
    assert "every 1s" not in html
    job.refresh_from_db()
    assert job.status == "failed" and job.pending_key is None
    assert AuditLog.objects.filter(action="summary.cancelled").count() == 1
    # a worker that receives it afterwards leaves it alone
    assert summary_job_run(job_id=job.pk).status == "failed" and not Collapse.objects.exists()
    # and a new summary of the thread can be asked for again
    editor_client.post(f"/threads/{thread.pk}/summarize/", {"start_position": 2, "end_position": 5}, **HTMX)
    assert Job.objects.filter(status="queued").count() == 1


def test_only_queued_jobs_of_ones_own_workspace_are_cancelled_by_editors(
        editor_client, viewer_client, outsider_client, thread, job):
    url = f"/threads/{thread.pk}/jobs/{job.pk}/cancel/"
    assert viewer_client.post(url).status_code == 403
    assert outsider_client.post(url).status_code == 404
    Job.objects.filter(pk=job.pk).update(status="running", started_at=timezone.now())
    assert editor_client.post(url).status_code == 409
    job.refresh_from_db()
    assert job.status == "running"
    running = editor_client.get(f"/jobs/{job.pk}/", **HTMX).content.decode()
    assert "The worker is summarizing" in running and ">Cancel</button>" not in running


def test_cancel_without_javascript_redirects_with_a_message(editor_client, thread, job):
    response = editor_client.post(f"/threads/{thread.pk}/jobs/{job.pk}/cancel/")
    assert response.status_code == 302 and response["Location"] == f"/threads/{thread.pk}/"
    assert "Summary job cancelled" in editor_client.get(response["Location"]).content.decode()
