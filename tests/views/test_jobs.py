"""Summary jobs on the page: how long they wait, that no worker took them, their stage, the
timeout, Cancel and Retry."""

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
    assert "Running: reading the range" in running and ">Cancel</button>" not in running


def test_cancel_without_javascript_redirects_with_a_message(editor_client, thread, job):
    response = editor_client.post(f"/threads/{thread.pk}/jobs/{job.pk}/cancel/")
    assert response.status_code == 302 and response["Location"] == f"/threads/{thread.pk}/"
    assert "Summary job cancelled" in editor_client.get(response["Location"]).content.decode()


def test_a_running_job_shows_its_stage_range_and_elapsed_time(editor_client, thread, job):
    Job.objects.filter(pk=job.pk).update(
        status="running", attempts=1, started_at=timezone.now() - timedelta(seconds=5),
        progress={"stage": "summarizing", "start_position": 2, "end_position": 5, "events": 4,
                  "tokens": 1234, "backend": "extractive"})
    html = editor_client.get(f"/jobs/{job.pk}/", **HTMX).content.decode()
    assert "Running: summarizing 4 events (#2–#5, 1.2k tokens) with extractive" in html
    assert "for 5 s (attempt 1)" in html and "range #2–#5" in html and "every 1s" in html
    assert "Timed out" not in html and ">Retry</button>" not in html


def test_a_queued_job_past_the_timeout_is_shown_timed_out_and_retried(editor_client, thread, job, settings):
    settings.SUMMARIZER_JOB_TIMEOUT = 60
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(seconds=90))
    html = editor_client.get(f"/jobs/{job.pk}/", **HTMX).content.decode()
    assert "<strong>Timed out:</strong> queued for 90 s, longer than the 60 s allowed" in html
    assert ">Cancel</button>" in html and ">Retry</button>" in html and "data-timed-out" in html
    response = editor_client.post(f"/threads/{thread.pk}/jobs/{job.pk}/retry/", **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "Summary queued for the worker" in html and "waiting 0 s" in html
    job.refresh_from_db()
    assert job.status == "failed" and job.error == "Timed out after 90 s queued; retried by eddie."
    fresh = Job.objects.get(status="queued")
    assert f'id="job-{fresh.pk}"' in html and fresh.params["start_position"] == 2
    assert AuditLog.objects.filter(action="summary.retried").count() == 1


def test_a_running_job_past_the_timeout_can_be_cancelled_and_retry_needs_an_editor(
        editor_client, viewer_client, outsider_client, thread, job, settings):
    settings.SUMMARIZER_JOB_TIMEOUT = 60
    Job.objects.filter(pk=job.pk).update(status="running", attempts=1,
                                         started_at=timezone.now() - timedelta(seconds=61))
    html = editor_client.get(f"/jobs/{job.pk}/", **HTMX).content.decode()
    assert "<strong>Timed out:</strong> running for 61 s, longer than the 60 s allowed (attempt 1)" in html
    assert ">Cancel</button>" in html and ">Retry</button>" in html
    retry = f"/threads/{thread.pk}/jobs/{job.pk}/retry/"
    assert viewer_client.post(retry).status_code == 403
    assert outsider_client.post(retry).status_code == 404
    assert editor_client.get(retry).status_code == 405
    html = editor_client.post(f"/threads/{thread.pk}/jobs/{job.pk}/cancel/", **HTMX).content.decode()
    assert "Cancelled by eddie after it ran longer than 60 s (timed out)." in html
    assert ">Retry</button>" in html and "every 1s" not in html
    # a failed job is retried without the JavaScript too: to the new job's page
    response = editor_client.post(retry)
    fresh = Job.objects.get(status="queued")
    assert response.status_code == 302 and response["Location"] == f"/jobs/{fresh.pk}/"
    done = Job.objects.filter(pk=fresh.pk)
    done.update(status="done", finished_at=timezone.now())
    assert editor_client.post(f"/threads/{thread.pk}/jobs/{fresh.pk}/retry/", **HTMX).status_code == 409
    assert Job.objects.count() == 2


def test_a_revisit_shows_queued_and_timed_out_jobs_not_finished_ones(editor_client, thread, job, settings):
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert f'id="job-{job.pk}"' in html and "Summary queued for the worker" in html
    assert 'hx-trigger="every 1s"' in html  # it polls on, as when it was queued
    settings.SUMMARIZER_JOB_TIMEOUT = 30
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(seconds=60))
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert "Timed out:" in html and ">Retry</button>" in html and ">Cancel</button>" in html
    summary_job_run(job_id=job.pk)
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert f'id="job-{job.pk}"' not in html


def test_a_finished_job_polled_by_the_page_says_summary_ready_once(editor_client, thread, job):
    summary_job_run(job_id=job.pk)
    response = editor_client.get(f"/jobs/{job.pk}/", **HTMX)
    assert response["HX-Refresh"] == "true"
    collapse = Collapse.objects.get()
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert "Summary ready: #2–#5 (4 events) are summarized." in html
    assert f'href="/threads/{thread.pk}/?around=2#c{collapse.pk}">Show it</a>' in html
    assert f'action="/threads/{thread.pk}/collapses/{collapse.pk}/undo/"' in html
    assert "Summary ready" not in editor_client.get(f"/threads/{thread.pk}/").content.decode()


def test_undo_collapse_reopens_the_page_at_the_originals(editor_client, thread, job):
    summary_job_run(job_id=job.pk)
    collapse = Collapse.objects.get()
    response = editor_client.post(f"/threads/{thread.pk}/collapses/{collapse.pk}/undo/", **HTMX)
    assert response.status_code == 204
    assert response["HX-Redirect"] == f"/threads/{thread.pk}/?around=2"
