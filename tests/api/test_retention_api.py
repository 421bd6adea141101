"""Retention through the API: the workspace's policy (admin scope to change) and a session's
override (write scope) and legal hold (admin scope), by services.retention's rules, audited."""

from datetime import timedelta

import pytest

from contextstore.models import AuditLog, Session, Workspace
from contextstore.services.workspaces import api_token_create
from tests.api.conftest import client_for

WORKSPACE = "/api/v1/workspace/retention/"


@pytest.fixture
def admin_client(workspace, actor):
    return client_for(api_token_create(workspace=workspace, name="ops", scope="admin", actor=actor)[1])


def _session_url(session) -> str:
    return f"/api/v1/sessions/{session.pk}/retention/"


def test_the_workspace_policy_is_read_by_any_token_and_set_with_admin_scope(
        admin_client, api_client, read_client, workspace):
    assert read_client.get(WORKSPACE).json() == {"event_days": None, "session_days": None}
    changed = admin_client.patch(WORKSPACE, {"event_days": 30, "session_days": 90}, format="json")
    assert changed.status_code == 200, changed.content
    assert changed.json() == {"event_days": 30, "session_days": 90}
    workspace.refresh_from_db()
    assert (workspace.retention_event_days, workspace.retention_session_days) == (30, 90)
    log = AuditLog.objects.get(action="retention.policy")
    assert log.target_type == "workspace" and log.actor_type == "token"
    assert log.details == {"retention_event_days": 30, "retention_session_days": 90}
    # a field left out stays; null removes the rule
    assert admin_client.patch(WORKSPACE, {"event_days": None}, format="json").json() == {
        "event_days": None, "session_days": 90}
    assert AuditLog.objects.filter(action="retention.policy").count() == 2
    assert api_client.get(WORKSPACE).json() == {"event_days": None, "session_days": 90}


@pytest.mark.parametrize("client_name", ["api_client", "read_client"])
def test_changing_the_workspace_policy_without_admin_scope_is_403(client_name, request, workspace):
    response = request.getfixturevalue(client_name).patch(WORKSPACE, {"event_days": 3}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "scope"
    assert Workspace.objects.get(pk=workspace.pk).retention_event_days is None
    assert not AuditLog.objects.filter(action="retention.policy").exists()


@pytest.mark.parametrize("body, place", [
    ({"event_days": -1}, "event_days"),
    ({"event_days": 0}, "event_days"),
    ({"session_days": 36501}, "session_days"),
    ({"event_days": 2.5}, "event_days"),
    ({"event_days": "30"}, "event_days"),
    ({"event_days": True}, "event_days"),
    ({"session_days": [3]}, "session_days"),
    ({"evnt_days": 3}, "evnt_days"),
])
def test_bad_values_are_400_naming_the_field_and_change_nothing(admin_client, workspace, session,
                                                                body, place):
    response = admin_client.patch(WORKSPACE, body, format="json")
    assert response.status_code == 400, response.content
    assert place in response.json()["error"]["details"]
    response = admin_client.patch(_session_url(session), body, format="json")
    assert response.status_code == 400 and place in response.json()["error"]["details"]
    assert admin_client.patch(_session_url(session), {"legal_hold": "yes"},
                              format="json").status_code == 400
    assert admin_client.patch(WORKSPACE, [1], format="json").status_code == 400
    workspace.refresh_from_db()
    session.refresh_from_db()
    assert (workspace.retention_event_days, workspace.retention_session_days) == (None, None)
    assert (session.retention_event_days, session.retention_session_days, session.legal_hold) == (
        None, None, False)
    assert not AuditLog.objects.filter(action="retention.policy").exists()


def test_a_session_override_is_set_with_write_scope_and_shows_the_policy_in_effect(
        admin_client, api_client, read_client, workspace, session):
    admin_client.patch(WORKSPACE, {"event_days": 30, "session_days": 90}, format="json")
    url = _session_url(session)
    before = read_client.get(url).json()
    assert before["event_days"] is None and before["legal_hold"] is False
    assert before["effective"] == {"event_days": 30, "session_days": 90, "legal_hold": False}
    session.refresh_from_db()
    assert before["expires_at"].startswith(
        (session.last_activity_at + timedelta(days=90)).strftime("%Y-%m-%dT%H:%M"))

    changed = api_client.patch(url, {"session_days": 7}, format="json")
    assert changed.status_code == 200, changed.content
    body = changed.json()
    assert (body["event_days"], body["session_days"]) == (None, 7)
    assert body["effective"] == {"event_days": 30, "session_days": 7, "legal_hold": False}
    assert Session.objects.get(pk=session.pk).retention_session_days == 7
    log = AuditLog.objects.filter(action="retention.policy", target_type="session").get()
    assert log.details == {"retention_session_days": 7} and log.target_id == str(session.pk)
    assert read_client.patch(url, {"session_days": 8}, format="json").status_code == 403
    assert Session.objects.get(pk=session.pk).retention_session_days == 7


def test_a_legal_hold_needs_admin_scope(admin_client, api_client, session):
    url = _session_url(session)
    refused = api_client.patch(url, {"legal_hold": True, "event_days": 3}, format="json")
    assert refused.status_code == 403
    assert "admin scope" in refused.json()["error"]["message"]
    session.refresh_from_db()
    assert (session.legal_hold, session.retention_event_days) == (False, None)
    held = admin_client.patch(url, {"legal_hold": True}, format="json").json()
    assert held["legal_hold"] is True and held["expires_at"] is None
    assert held["effective"] == {"event_days": None, "session_days": None, "legal_hold": True}
    assert AuditLog.objects.get(action="retention.policy").details == {"legal_hold": True}
    assert api_client.patch(url, {"legal_hold": False}, format="json").status_code == 403
    assert Session.objects.get(pk=session.pk).legal_hold is True
    # an unchanged value is no change: no audit row
    assert admin_client.patch(url, {"legal_hold": True}, format="json").status_code == 200
    assert AuditLog.objects.filter(action="retention.policy").count() == 1


def test_another_workspaces_session_is_404(admin_client, other_workspace, actor):
    from contextstore.services.sessions import session_ensure

    theirs = session_ensure(workspace=other_workspace, key="theirs", actor=actor)[0]
    assert admin_client.get(_session_url(theirs)).status_code == 404
    response = admin_client.patch(_session_url(theirs), {"legal_hold": True}, format="json")
    assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.legal_hold is False
    assert admin_client.get("/api/v1/sessions/999999999/retention/").status_code == 404


def test_the_admin_form_applies_the_same_rules(workspace, session, db):
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="pw-for-tests-123"))
    response = client.post(f"/admin/contextstore/workspace/{workspace.pk}/change/", {
        "slug": workspace.slug, "name": workspace.name, "retention_event_days": "0",
        "retention_session_days": "", "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0"})
    assert response.status_code == 200 and "from 1 to 36500" in response.content.decode()
    workspace.refresh_from_db()
    assert workspace.retention_event_days is None
    response = client.post(f"/admin/contextstore/session/{session.pk}/change/", {
        "title": "t", "agent": "a", "metadata": "{}", "retention_session_days": "36501"})
    assert response.status_code == 200 and "from 1 to 36500" in response.content.decode()
    session.refresh_from_db()
    assert session.retention_session_days is None
