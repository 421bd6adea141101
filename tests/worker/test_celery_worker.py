"""Summaries made by a real Celery worker process (Redis broker, PostgreSQL)."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from rest_framework.test import APIClient

from contextstore.models import Collapse, Event, Job, Thread
from contextstore.selectors import rendering
from contextstore.services import summaries
from contextstore.services.events import event_append
from tests.conftest import messages
from tests.worker.conftest import wait_for

pytestmark = pytest.mark.worker


@pytest.fixture
def api(token) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token[1]}")
    return client


def test_events_pushed_past_the_budget_through_the_api_are_summarized_by_a_worker(
    make_worker, api, thread
):
    make_worker().start()
    url = f"/api/v1/threads/{thread.pk}/"
    response = api.put(url + "summarizer/", {"token_budget": {"max_tokens": 2000,
                                                             "preserve_recent": 5}}, format="json")
    assert response.status_code == 200, response.content
    for i in range(6):
        response = api.post(url + "events/", {"events": messages(10, start=i * 10)}, format="json")
        assert response.status_code == 201, response.content

    collapse = wait_for(lambda: Collapse.objects.filter(thread=thread).first(), what="a collapse")
    job = Job.objects.get(collapse=collapse)
    wait_for(lambda: Job.objects.get(pk=job.pk).status == "done", what="the job to finish")
    assert collapse.source == "token_budget" and collapse.provenance["backend"] == "extractive"
    status = api.get(f"/api/v1/jobs/{job.pk}/").json()
    assert status["status"] == "done" and status["result"]["collapse"] == collapse.pk

    fresh = Thread.objects.get(pk=thread.pk)
    out = rendering.context_render(thread=fresh, max_tokens=2000)
    assert out["stats"]["fits"] and out["stats"]["sections"]["history"]["events_omitted"] == 0
    originals = Event.objects.filter(thread=thread, type="Message")
    assert originals.count() == 60  # nothing deleted
    assert originals.filter(status="collapsed", collapse=collapse).count() == collapse.event_count
    assert set(originals.exclude(status="collapsed").values_list("status", flat=True)) == {"active"}


def test_a_range_summary_requested_through_the_api_reports_its_job(make_worker, api, thread):
    make_worker().start()
    url = f"/api/v1/threads/{thread.pk}/"
    api.post(url + "events/", {"events": messages(20)}, format="json")
    response = api.post(url + "collapse/", {"start_position": 3, "end_position": 9, "summarize": True},
                        format="json")
    assert response.status_code == 202, response.content
    job_url = f"/api/v1/jobs/{response.json()['job_id']}/"
    done = wait_for(lambda: (r := api.get(job_url).json())["status"] == "done" and r,
                    what="the job to finish")
    collapse = Collapse.objects.get(pk=done["result"]["collapse"])
    assert (collapse.start_position, collapse.end_position, collapse.event_count) == (3, 9, 7)


class StallingChat(ThreadingHTTPServer):
    """A chat-completions endpoint whose first answer never comes (until released)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), StallingHandler)
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.calls = 0


class StallingHandler(BaseHTTPRequestHandler):
    server: StallingChat

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.calls += 1
        if self.server.calls == 1:
            self.server.arrived.set()
            self.server.release.wait(60)
        body = json.dumps({"model": "stub", "choices": [{"message": {
            "role": "assistant", "content": "Summary from the LLM after the crash."}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 8}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def stalling_chat() -> Iterator[StallingChat]:
    server = StallingChat()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()


def test_a_worker_killed_mid_summary_loses_nothing_and_makes_one_collapse(
    make_worker, stalling_chat, thread, actor
):
    worker = make_worker(SUMMARIZER_BACKEND="openai", SUMMARIZER_RETRIES="0",
                         SUMMARIZER_TIMEOUT="60",
                         SUMMARIZER_BASE_URL=f"http://127.0.0.1:{stalling_chat.server_port}/v1")
    worker.start()
    summaries.summarizer_configure(
        thread=thread, config={"token_budget": {"max_tokens": 2000, "preserve_recent": 5}},
        actor=actor)
    event_append(thread=thread, events=messages(60), actor=actor)
    job = Job.objects.get(thread=thread)

    assert stalling_chat.arrived.wait(30), "the worker never asked the LLM"
    assert Job.objects.get(pk=job.pk).status == "running"
    # The agent keeps talking while the summary is being made.
    event_append(thread=thread, events=messages(3, start=100), actor=actor)
    worker.kill()
    assert not Collapse.objects.exists()

    stalling_chat.release.set()  # the endpoint recovers; the old connection is gone anyway
    worker.start()  # Redis hands the unacknowledged message to the new worker
    wait_for(lambda: Job.objects.get(pk=job.pk).status == "done", what="the job to finish")

    job.refresh_from_db()
    collapse = Collapse.objects.get(thread=thread)  # exactly one
    assert job.attempts == 2 and job.result["collapse"] == collapse.pk
    assert collapse.summary_event.content == "Summary from the LLM after the crash."
    assert collapse.provenance["backend"] == "openai" and collapse.provenance["usage"][
        "prompt_tokens"] == 100
    # The second attempt decided its range afresh: the three late events are older than the
    # five preserved ones by then, so they are summarized; nothing after the range is touched.
    assert (collapse.start_position, collapse.end_position) == (1, 58)
    events = Event.objects.filter(thread=thread)
    assert events.filter(type="Message").count() == 63  # none lost
    assert list(events.filter(status="active", type="Message").order_by("seq")
                .values_list("seq", flat=True)) == [59, 60, 61, 62, 63]
    assert events.filter(status="collapsed").count() == 58


def test_the_embedded_filesystem_broker_runs_jobs_and_recovery_resends_a_lost_one(
    make_fs_worker, stalling_chat, thread, actor
):
    """The filesystem transport deletes a message when a worker takes it, so a SIGKILL loses
    it; the job row stays `running` and beat's recovery sends it again."""
    worker = make_fs_worker(
        SUMMARIZER_BACKEND="openai", SUMMARIZER_RETRIES="0",
        SUMMARIZER_BASE_URL=f"http://127.0.0.1:{stalling_chat.server_port}/v1")
    worker.start()
    event_append(thread=thread, events=messages(10), actor=actor)
    job = summaries.summarize_range_request(thread=thread, start_position=1, end_position=5, actor=actor)
    assert stalling_chat.arrived.wait(30), "the worker never took the job"
    worker.kill()
    stalling_chat.release.set()
    worker.start()
    assert Job.objects.get(pk=job.pk).status == "running"  # lost with the worker
    assert summaries.summary_jobs_recover(stale_after=0)["resent"] == 1  # what beat does
    wait_for(lambda: Job.objects.get(pk=job.pk).status == "done", what="the resent job")
    collapse = Collapse.objects.get(thread=thread)
    assert (collapse.start_position, collapse.end_position, collapse.event_count) == (1, 5, 5)
    assert Job.objects.get(pk=job.pk).attempts == 2
