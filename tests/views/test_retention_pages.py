"""Retention on the pages, admin and API: the policy and the expiry are shown, and pages and
endpoints naming deleted history answer 200 and say it expired."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from contextstore.models import AuditLog, Event, Session, Thread
from contextstore.selectors import rendering
from contextstore.services import retention
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.memories import memory_remember
from contextstore.services.renders import render_record
from contextstore.services.workspaces import api_token_create
from tests.conftest import messages


@pytest.fixture
def admin_client(db) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="pw-for-tests-123"))
    return client


def _expire_all_but_newest(thread: Thread, keep: int) -> None:
    """Backdate every row except the newest `keep` and run a 30-day policy over them."""
    retention.retention_policy_set(target=thread.workspace, actor=retention.ACTOR, event_days=30)
    old = timezone.now() - timedelta(days=31)
    thread.refresh_from_db()
    Event.objects.filter(thread=thread, seq__lte=thread.last_seq - keep).update(created_at=old)
    retention.retention_run(batch_size=2)


def test_the_session_page_shows_when_it_expires_or_that_it_is_held(editor_client, session, workspace):
    html = editor_client.get(f"/sessions/{session.pk}/").content.decode()
    assert "No retention policy" in html
    retention.retention_policy_set(target=workspace, actor=retention.ACTOR, event_days=7, session_days=30)
    html = editor_client.get(f"/sessions/{session.pk}/").content.decode()
    expires = (session.last_activity_at + timedelta(days=30)).strftime("%Y-%m-%d")
    assert "Expires <time" in html and expires in html and "Events expire 7 days" in html
    retention.retention_policy_set(target=Session.objects.get(pk=session.pk), actor=retention.ACTOR,
                                   legal_hold=True)
    html = editor_client.get(f"/sessions/{session.pk}/").content.decode()
    assert "Legal hold" in html and "Expires <time" not in html


def test_admin_shows_and_sets_the_policy_through_the_service(admin_client, workspace, session):
    admin_client.post(f"/admin/contextstore/workspace/{workspace.pk}/change/", {
        "name": "Acme", "retention_event_days": "14", "retention_session_days": "",
        "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0"})
    workspace.refresh_from_db()
    assert workspace.retention_event_days == 14
    admin_client.post(f"/admin/contextstore/session/{session.pk}/change/", {
        "title": "t", "agent": "a", "metadata": "{\"k\": 1}", "legal_hold": "on",
        "retention_event_days": "", "retention_session_days": "3"})
    session.refresh_from_db()
    assert session.legal_hold and session.retention_session_days == 3
    page = admin_client.get(f"/admin/contextstore/session/{session.pk}/change/").content.decode()
    assert "legal hold: exempt" in page
    listing = admin_client.get("/admin/contextstore/session/").content.decode()
    assert "Expires" in listing
    # set by the admin user, through the service: audited as them
    assert AuditLog.objects.filter(action="retention.policy", actor_label="root").count() == 2


def test_pages_and_api_naming_expired_history_say_expired(editor_client, workspace, thread, actor):
    event_append(thread=thread, actor=actor, events=messages(4))
    collapse = collapse_create(thread=thread, start_position=1, end_position=2, summary_text="s",
                               actor=actor)
    first = Event.objects.get(thread=thread, seq=1)
    memory = memory_remember(workspace=workspace, user_id="alice", content="likes tea",
                             source_event=first, actor=actor)[0]
    record = render_record(thread=thread, rendered=rendering.render(thread=thread, max_tokens=10_000),
                           actor=actor)
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "gpt-4o", "render_id": str(record.pk)}}])
    # rows 1-4 (two collapsed originals, two in the render) go; the summary (5) and the call stay
    _expire_all_but_newest(thread, keep=2)
    assert not Event.objects.filter(thread=thread, seq__lte=4).exists()

    page = editor_client.get(f"/threads/{thread.pk}/collapses/{collapse.pk}/")
    assert page.status_code == 200 and "2 originals expired" in page.content.decode()
    sent = editor_client.get(f"/threads/{thread.pk}/calls/6/sent/")
    assert sent.status_code == 200 and "expired (deleted by retention)" in sent.content.decode()
    timeline = editor_client.get(f"/threads/{thread.pk}/")
    assert timeline.status_code == 200 and "Events #1–#4 expired" in timeline.content.decode()
    assert editor_client.get(f"/threads/{thread.pk}/", {"around": 1}).status_code == 200

    api = APIClient()
    raw = api_token_create(workspace=workspace, name="t", actor=actor)[1]
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    rebuilt = api.get(f"/api/v1/renders/{record.pk}/")
    assert rebuilt.status_code == 200 and rebuilt.json()["expired_events"] == 2
    remembered = api.get("/api/v1/memories/", {"user_id": "alice"})
    assert remembered.status_code == 200
    [item] = [m for m in remembered.json()["results"] if m["id"] == memory.pk]
    assert (item["source_event"], item["source_expired"]) == (None, True)
    undo = api.post(f"/api/v1/collapses/{collapse.pk}/undo/")
    assert undo.status_code == 409 and undo.json()["error"]["code"] == "originals_expired"
