from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from contextstore.models import Session
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.conftest import messages
from tests.views.conftest import HTMX


def make_sessions(workspace, actor, n: int, **fields) -> list[Session]:
    return [session_ensure(workspace=workspace, key=f"k-{i:03d}", actor=actor, **fields)[0]
            for i in range(n)]


def test_it_sends_anonymous_people_to_the_login_page(client, workspace):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_the_login_page_renders_and_logs_in(client, editor):
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"username": "eddie", "password": "pw-for-tests-123"})
    assert response.status_code == 302
    assert client.get("/").status_code == 200


def test_it_lists_only_the_sessions_of_the_members_workspace(editor_client, session, other_workspace, actor):
    session_ensure(workspace=other_workspace, key="secret-session", actor=actor)
    html = editor_client.get("/").content.decode()
    assert "s-1" in html
    assert "secret-session" not in html


def test_it_refuses_another_workspace_by_slug_with_a_404(editor_client, session, other_workspace):
    assert editor_client.get("/?ws=rival").status_code == 404


def test_a_superuser_sees_every_workspace(session, other_workspace, actor):
    session_ensure(workspace=other_workspace, key="their-session", actor=actor)
    admin = get_user_model().objects.create_superuser("root", password="pw-for-tests-123")
    client = Client()
    client.force_login(admin)
    html = client.get("/?ws=rival").content.decode()
    assert "their-session" in html
    assert 'value="acme"' in html and 'value="rival"' in html


def test_a_person_without_workspaces_gets_a_friendly_page(client, user):
    client.force_login(user)
    assert "not a member of any workspace" in client.get("/").content.decode()


def test_search_as_you_type_returns_only_the_results_fragment(editor_client, workspace, actor):
    session_ensure(workspace=workspace, key="alpha", title="Refund flow", actor=actor)
    session_ensure(workspace=workspace, key="beta", agent="planner", actor=actor)
    response = editor_client.get("/", {"q": "refund"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html and 'id="results"' in html
    assert "Refund flow" in html and "beta" not in html


def test_filters_narrow_by_agent_user_archived_errors_and_activity(editor_client, workspace, actor):
    a = session_ensure(workspace=workspace, key="a", agent="planner", user_id="u1", actor=actor)[0]
    b = session_ensure(workspace=workspace, key="b", agent="coder", user_id="u2", actor=actor)[0]
    c = session_ensure(workspace=workspace, key="c", agent="coder", actor=actor)[0]
    Session.objects.filter(pk=b.pk).update(error_count=2)
    Session.objects.filter(pk=c.pk).update(archived=True)
    Session.objects.filter(pk=a.pk).update(last_activity_at=timezone.now() - timedelta(days=3))

    def keys(**params) -> set[str]:
        html = editor_client.get("/", params, **HTMX).content.decode()
        return {k for k in ("a", "b", "c") if f'<div class="sub">{k}' in html}

    assert keys() == {"a", "b"}
    assert keys(agent="planner") == {"a"}
    assert keys(user="u2") == {"b"}
    assert keys(archived="yes") == {"c"}
    assert keys(archived="all") == {"a", "b", "c"}
    assert keys(errors="on") == {"b"}
    assert keys(active="day") == {"b"}


def test_load_more_pages_by_last_activity_without_repeats(editor_client, workspace, actor):
    make_sessions(workspace, actor, 60)
    first = editor_client.get("/").content.decode()
    assert first.count('class="session-row"') == 50
    cursor = first.split("before=")[1].split('"')[0]
    second = editor_client.get(f"/?before={cursor}", **HTMX).content.decode()
    assert second.count('class="session-row"') == 10
    assert "Load more" not in second
    shown = {line for line in (first + second).split() if line.startswith("k-")}
    assert len([k for k in shown]) == len(set(shown))


@pytest.mark.slow
def test_the_sessions_list_queries_do_not_grow_with_history(
    editor_client, workspace, actor, django_assert_max_num_queries
):
    make_sessions(workspace, actor, 60)
    for i in range(3):
        session = session_ensure(workspace=workspace, key=f"big-{i}", actor=actor)[0]
        thread = thread_ensure(session=session, actor=actor)[0]
        event_append(thread=thread, events=messages(300 * (i + 1), words=6), actor=actor)
    # 13: the list's own 10, the saved-views menu's one, the person's default view looked up
    # (asked without filters) and the firing-alerts banner's one
    with django_assert_max_num_queries(13):
        response = editor_client.get("/")
    assert response.status_code == 200
    assert ">900<" in response.content.decode()


def test_the_session_page_shows_threads_with_fork_lineage_and_runs(editor_client, thread, actor):
    from contextstore.services.runs import run_start
    from contextstore.services.threads import thread_fork

    event_append(thread=thread, events=messages(4), actor=actor)
    thread_fork(thread=thread, name="what-if", start_position=1, end_position=2, actor=actor)
    run_start(thread=thread, run_id="run-42", actor=actor)
    html = editor_client.get(f"/sessions/{thread.session_id}/").content.decode()
    assert "what-if" in html and "forked from main" in html and "positions 1–2" in html
    assert "run-42" in html
    fragment = editor_client.get(f"/sessions/{thread.session_id}/", **HTMX).content.decode()
    assert 'id="runs"' in fragment and "<html" not in fragment


def test_another_workspaces_session_is_a_404(outsider_client, session):
    assert outsider_client.get(f"/sessions/{session.pk}/").status_code == 404


@pytest.mark.parametrize("agent_text", ['<script>alert(1)</script>', '"><img src=x onerror=alert(1)>'])
def test_session_fields_are_escaped(editor_client, workspace, actor, agent_text):
    session_ensure(workspace=workspace, key=agent_text, title=agent_text, agent="a", actor=actor)
    html = editor_client.get("/").content.decode()
    assert agent_text not in html
    assert "&lt;" in html


def test_editors_archive_and_reopen_a_session_and_viewers_cannot(editor_client, viewer_client, session):
    assert "Archive session" not in viewer_client.get(f"/sessions/{session.pk}/").content.decode()
    assert viewer_client.post(f"/sessions/{session.pk}/archive/").status_code == 403
    assert "Archive session" in editor_client.get(f"/sessions/{session.pk}/").content.decode()
    editor_client.post(f"/sessions/{session.pk}/archive/")
    session.refresh_from_db()
    assert session.archived
    editor_client.post(f"/sessions/{session.pk}/archive/")
    session.refresh_from_db()
    assert not session.archived


def test_pages_and_fragments_vary_on_the_htmx_header(editor_client, session):
    response = editor_client.get("/", **HTMX)
    assert "HX-Request" in response["Vary"]


def test_a_history_restore_gets_the_full_page(editor_client, session):
    # htmx is configured to restore history without HX-Request, so the view serves the page.
    html = editor_client.get("/", HTTP_HX_HISTORY_RESTORE_REQUEST="true").content.decode()
    assert "<html" in html
