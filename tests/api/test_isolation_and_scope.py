"""Every thread endpoint hides other workspaces (404) and refuses writes from read tokens (403)."""

import pytest

from contextstore.models import AuditLog, Job
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from tests.conftest import messages

THREAD_CALLS = [
    ("get", ""), ("get", "events/"), ("post", "events/"), ("post", "collapse/"),
    ("put", "summarizer/"), ("get", "blocks/"), ("put", "blocks/b/"), ("delete", "blocks/b/"),
    ("get", "state/"), ("put", "state/"), ("patch", "state/"), ("get", "state/revisions/"),
    ("post", "state/revisions/1/restore/"), ("post", "input/"), ("post", "results/"),
    ("get", "results/s/"), ("post", "iteration/"), ("put", "max-history-size/"),
    ("get", "history/"), ("post", "reset/"), ("post", "reset-all/"), ("post", "clear-context/"),
    ("get", "context/"), ("get", "window/?count=1"), ("post", "fork/"), ("get", "tokens/"),
    ("get", "export/"), ("get", "runs/"), ("get", "providers/p/"), ("put", "providers/p/"),
    ("delete", ""), ("get", "clears/"), ("post", "clears/1/undo/"),
]
BODIES = {
    "events/": {"events": [{"type": "Message", "content": "x"}]},
    "collapse/": {"start_position": 1, "end_position": 1, "summary_text": "s"},
    "summarizer/": {"token_budget": {"max_tokens": 1000}},
    "blocks/b/": {"value": "v"}, "state/": {"state": {"k": 1}}, "input/": {"input": "q"},
    "results/": {"step": "s", "result": 1}, "max-history-size/": {"size": 3},
    "fork/": {"name": "f"}, "providers/p/": {"state": {}},
}


def call(client, method: str, url: str, sub: str):
    body = BODIES.get(sub.split("?")[0]) if method in ("post", "put", "patch") else None
    return getattr(client, method)(url + sub, body, format="json")


@pytest.fixture
def busy_thread(thread, actor):
    event_append(thread=thread, events=messages(3), actor=actor)
    return thread


@pytest.mark.parametrize(("method", "sub"), THREAD_CALLS)
def test_another_workspace_gets_404_and_changes_nothing(other_client, busy_thread, method, sub):
    url = f"/api/v1/threads/{busy_thread.pk}/"
    before = AuditLog.objects.count()
    response = call(other_client, method, url, sub)
    assert response.status_code == 404, (method, sub, response.content)
    assert response.json()["error"]["code"] == "not_found"
    assert AuditLog.objects.count() == before


@pytest.mark.parametrize(("method", "sub"), [c for c in THREAD_CALLS if c[0] != "get"])
def test_a_read_token_gets_403_on_every_write(read_client, busy_thread, method, sub):
    url = f"/api/v1/threads/{busy_thread.pk}/"
    before = AuditLog.objects.count()
    response = call(read_client, method, url, sub)
    assert response.status_code == 403, (method, sub)
    assert AuditLog.objects.count() == before


@pytest.mark.parametrize(("method", "sub"), [c for c in THREAD_CALLS if c[0] == "get"])
def test_a_read_token_reads_everything(read_client, busy_thread, method, sub):
    response = call(read_client, method, f"/api/v1/threads/{busy_thread.pk}/", sub)
    assert response.status_code in (200, 404), (sub, response.content)
    if response.status_code == 404:  # only lookups of things that do not exist yet
        assert sub in ("results/s/", "providers/p/")


def test_collapses_jobs_and_sessions_of_another_workspace_are_404(
        api_client, other_client, read_client, busy_thread, session, actor):
    collapse = collapse_create(thread=busy_thread, start_position=1, end_position=2, summary_text="s",
                               actor=actor)
    assert other_client.post(f"/api/v1/collapses/{collapse.pk}/undo/").status_code == 404
    assert read_client.post(f"/api/v1/collapses/{collapse.pk}/undo/").status_code == 403
    queued = api_client.post(f"/api/v1/threads/{busy_thread.pk}/collapse/",
                             {"start_position": 3, "end_position": 3, "summarize": True}, format="json")
    assert queued.status_code == 202
    job_id = queued.json()["job_id"]
    job = api_client.get(f"/api/v1/jobs/{job_id}/").json()
    assert (job["id"], job["kind"], job["thread"]) == (job_id, "range", busy_thread.pk)
    assert set(job) == {"id", "kind", "status", "thread", "params", "result", "error",
                        "created_at", "started_at", "finished_at"}
    assert other_client.get(f"/api/v1/jobs/{job_id}/").status_code == 404
    assert api_client.get("/api/v1/jobs/not-a-uuid/").status_code == 404
    assert Job.objects.filter(pk=job_id).exists()
    assert other_client.get(f"/api/v1/sessions/{session.pk}/threads/").status_code == 404
    assert other_client.patch(f"/api/v1/sessions/{session.pk}/", {"title": "x"},
                              format="json").status_code == 404


def test_summarizer_settings_are_set_and_removed(api_client, thread_url):
    config = {"token_budget": {"max_tokens": 8000, "preserve_recent": 10}, "per_run": {"min_events": 3}}
    response = api_client.put(f"{thread_url}summarizer/", config, format="json")
    assert response.status_code == 200
    assert response.json()["summarizer"]["token_budget"]["max_tokens"] == 8000
    bad = api_client.put(f"{thread_url}summarizer/", {"token_budget": {"max_tokens": -5}},
                         format="json")
    assert bad.status_code == 400
    assert api_client.get(thread_url).json()["summarizer"]["token_budget"]["max_tokens"] == 8000
    off = api_client.put(f"{thread_url}summarizer/", {}, format="json")
    assert off.status_code == 200 and off.json()["summarizer"] == {}
    cleared = api_client.put(f"{thread_url}summarizer/", "null", content_type="application/json")
    assert cleared.status_code == 200 and cleared.json()["summarizer"] is None
    listed = api_client.put(f"{thread_url}summarizer/", [1], format="json")
    assert listed.status_code == 400
    assert api_client.put(f"{thread_url}summarizer/").status_code == 400  # no body at all
