"""The dashboard's audited reads (session page, thread page, what the model sees, an LLM call as
sent, export) and the session page's "Viewed by" panel; the admin lists the rows read-only."""

from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from contextstore.models import Membership, ReadAudit
from contextstore.services.access_log import Action, record_read
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.views.conftest import HTMX

XSS = "<script>alert(1)</script>"


def _call(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "hi"},
        {"type": "LLMCallStart", "data": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}},
    ])


def test_every_audited_page_writes_its_row_once_an_hour(editor_client, editor, session, thread, actor):
    _call(thread, actor)
    pages = [
        (f"/sessions/{session.pk}/", "session.view", "session", session.pk),
        (f"/threads/{thread.pk}/", "thread.view", "thread", thread.pk),
        (f"/threads/{thread.pk}/context/", "context.view", "thread", thread.pk),
        (f"/threads/{thread.pk}/calls/2/sent/", "call.sent", "thread", thread.pk),
        (f"/threads/{thread.pk}/export/", "export", "thread", thread.pk),
        (f"/threads/{thread.pk}/export/?start_position=1&end_position=2", "export", "thread", thread.pk),
    ]
    for url, *_ in pages * 2:
        assert editor_client.get(url).status_code == 200, url
    rows = ReadAudit.objects.order_by("action")
    assert sorted({(a, t, int(i)) for _, a, t, i in pages}) == [
        (r.action, r.target_type, int(r.target_id)) for r in rows]
    assert all((r.actor_user, r.actor_type, r.actor_label, r.session_id, r.workspace_id)
               == (editor, "user", "eddie", session.pk, session.workspace_id) for r in rows)


def test_fragments_and_refused_pages_write_nothing(editor_client, outsider_client, session, thread):
    assert editor_client.get(f"/threads/{thread.pk}/", {"before": 5}, **HTMX).status_code == 200
    assert outsider_client.get(f"/sessions/{session.pk}/").status_code == 404
    assert outsider_client.get(f"/threads/{thread.pk}/export/").status_code == 404
    assert editor_client.get(f"/threads/{thread.pk}/calls/9/sent/").status_code == 404
    assert not ReadAudit.objects.exists()


def test_the_session_page_shows_who_viewed_it_escaped(editor_client, session, thread, token):
    stranger = get_user_model().objects.create_user(XSS, password="pw-for-tests-123")
    record_read(actor=Actor.for_user(stranger), action=Action.CALL_SENT, target=thread,
                workspace_id=thread.workspace_id, session_id=thread.session_id,
                now=datetime(2026, 1, 2, 3, 4, tzinfo=UTC))
    record_read(actor=Actor.for_token(token[0]), action=Action.CONTEXT_READ, target=thread,
                workspace_id=thread.workspace_id, session_id=thread.session_id)
    html = editor_client.get(f"/sessions/{session.pk}/").content.decode()
    panel = html[html.index('id="viewed-by"'):]
    panel = panel[:panel.index("</section>")]
    assert "Viewed by" in panel
    assert "eddie" in panel and "session page" in panel  # the reader sees their own read
    assert f"token:{token[0].prefix}" in panel and "(token)" in panel and "context (API)" in panel
    assert "an LLM call as sent" in panel and 'datetime="2026-01-02T03:04:00+00:00"' in panel
    assert XSS not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in panel


def test_the_panel_never_shows_another_workspaces_reads(editor_client, workspace, other_workspace,
                                                        session, actor):
    # a person of both workspaces reads the other one's session: only that session shows it
    both = get_user_model().objects.create_user("bo", password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=both, role=Membership.Role.VIEWER)
    Membership.objects.create(workspace=other_workspace, user=both, role=Membership.Role.VIEWER)
    theirs = session_ensure(workspace=other_workspace, key="theirs", actor=actor)[0]
    thread_ensure(session=theirs, actor=actor)
    client = Client()
    client.force_login(both)
    assert client.get(f"/sessions/{theirs.pk}/").status_code == 200
    html = editor_client.get(f"/sessions/{session.pk}/").content.decode()
    panel = html[html.index('id="viewed-by"'):]
    assert ">bo<" not in panel[:panel.index("</section>")]
    other = client.get(f"/sessions/{theirs.pk}/").content.decode()
    assert "eddie" not in other[other.index('id="viewed-by"'):]


@pytest.fixture
def root_client(db) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="pw-for-tests-123"))
    return client


def test_the_admin_lists_and_filters_reads_and_changes_none(root_client, editor_client, session):
    editor_client.get(f"/sessions/{session.pk}/")
    row = ReadAudit.objects.get()
    listing = root_client.get("/admin/contextstore/readaudit/", {
        "action": "session.view", "actor_type": "user", "target_type": "session",
        "workspace__id__exact": session.workspace_id, "q": "eddie"})
    assert listing.status_code == 200 and "eddie" in listing.content.decode()
    empty = root_client.get("/admin/contextstore/readaudit/", {"action": "export"})
    assert "eddie" not in empty.content.decode()
    assert root_client.get("/admin/contextstore/readaudit/add/").status_code == 403
    page = root_client.get(f"/admin/contextstore/readaudit/{row.pk}/change/")
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    deleted = root_client.post(f"/admin/contextstore/readaudit/{row.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 403
    assert ReadAudit.objects.filter(pk=row.pk).exists()
