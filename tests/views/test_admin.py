import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import Client

from contextstore.models import (
    AnnotationItem,
    AnnotationQueue,
    ApiToken,
    AuditLog,
    Collapse,
    ContextBlock,
    Event,
    Experiment,
    Job,
    Membership,
    Memory,
    ProviderState,
    ReadAudit,
    Run,
    ScoreConfig,
    Session,
    StateRevision,
    Thread,
    Workspace,
)
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from tests.conftest import messages

MODELS = [AnnotationItem, AnnotationQueue, ApiToken, AuditLog, Collapse, ContextBlock, Event, Experiment,
          Job, Membership, Memory, ProviderState, ReadAudit, Run, ScoreConfig, Session, StateRevision,
          Thread, Workspace]


@pytest.fixture
def admin_client(db) -> Client:
    user = get_user_model().objects.create_superuser("root", password="pw-for-tests-123")
    client = Client()
    client.force_login(user)
    return client


def test_every_model_is_registered():
    assert all(admin.site.is_registered(model) for model in MODELS)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_changelist_renders_with_search(admin_client, thread, actor, model):
    event_append(thread=thread, events=messages(3), actor=actor)
    url = f"/admin/contextstore/{model._meta.model_name}/"
    assert admin_client.get(url).status_code == 200
    assert admin_client.get(url, {"q": "x"}).status_code == 200


def test_audit_log_and_events_are_read_only(admin_client, thread, actor):
    event_append(thread=thread, events=messages(1), actor=actor)
    event = Event.objects.get()
    log = AuditLog.objects.first()
    for model, obj in ((Event, event), (AuditLog, log)):
        name = model._meta.model_name
        assert admin_client.get(f"/admin/contextstore/{name}/add/").status_code == 403
        page = admin_client.get(f"/admin/contextstore/{name}/{obj.pk}/change/")
        assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
        deleted = admin_client.post(f"/admin/contextstore/{name}/{obj.pk}/delete/", {"post": "yes"})
        assert deleted.status_code == 403
    assert Event.objects.filter(pk=event.pk).exists()


def test_audit_log_filters_by_actor_action_and_workspace(admin_client, workspace, thread, actor):
    response = admin_client.get("/admin/contextstore/auditlog/", {
        "action": "thread.create", "actor_type": "system", "workspace__id__exact": workspace.pk})
    assert response.status_code == 200 and "thread.create" in response.content.decode()


def test_creating_a_token_in_admin_shows_the_raw_value_once(admin_client, workspace):
    response = admin_client.post("/admin/contextstore/apitoken/add/",
                                 {"workspace": workspace.pk, "name": "ci", "scope": "read"}, follow=True)
    token = ApiToken.objects.get(name="ci")
    html = response.content.decode()
    assert "cs_" in html and "not shown again" in html
    raw = html.split("New API token")[1].split(": ")[1].split(" ")[0]
    from contextstore.services.workspaces import api_token_authenticate
    assert api_token_authenticate(raw) == token
    assert raw not in admin_client.get(f"/admin/contextstore/apitoken/{token.pk}/change/").content.decode()
    assert AuditLog.objects.filter(action="token.create", actor_label="root").exists()


def test_revoking_tokens_from_admin_goes_through_the_service(admin_client, token):
    api_token, _ = token
    admin_client.post("/admin/contextstore/apitoken/",
                      {"action": "revoke", "_selected_action": [api_token.pk]})
    api_token.refresh_from_db()
    assert api_token.revoked_at is not None
    assert AuditLog.objects.filter(action="token.revoke", actor_label="root").exists()


def test_thread_and_collapse_admin_actions_are_audited(admin_client, thread, actor):
    event_append(thread=thread, events=messages(4), actor=actor)
    collapse = collapse_create(thread=thread, start_position=1, end_position=2, summary_text="s", actor=actor)
    admin_client.post("/admin/contextstore/collapse/", {"action": "undo", "_selected_action": [collapse.pk]})
    collapse.refresh_from_db()
    assert collapse.undone_at is not None
    admin_client.post("/admin/contextstore/thread/",
                      {"action": "clear_context", "_selected_action": [thread.pk]})
    assert Event.objects.filter(thread=thread, status="cleared").count() == 4
    assert AuditLog.objects.filter(action="thread.clear_context", actor_label="root").exists()
    assert AuditLog.objects.filter(action="collapse.undo", actor_label="root").exists()


def test_archiving_sessions_from_admin(admin_client, session):
    admin_client.post("/admin/contextstore/session/", {"action": "archive", "_selected_action": [session.pk]})
    session.refresh_from_db()
    assert session.archived
    assert AuditLog.objects.filter(action="session.update", actor_label="root").exists()


def test_memberships_saved_in_admin_are_audited(admin_client, workspace, user):
    admin_client.post("/admin/contextstore/membership/add/",
                      {"workspace": workspace.pk, "user": user.pk, "role": "editor"})
    assert Membership.objects.get(user=user).role == "editor"
    assert AuditLog.objects.filter(action="membership.set", actor_label="root").exists()


def test_a_block_with_a_broken_expression_is_a_form_error_in_admin(admin_client, thread):
    response = admin_client.post("/admin/contextstore/contextblock/add/", {
        "thread": thread.pk, "name": "b", "expr": "{% if %}", "placement": "suffix", "order": 0})
    assert response.status_code == 200 and "does not compile" in response.content.decode()
    assert not ContextBlock.objects.exists()


def test_a_block_added_in_admin_is_created_by_the_service(admin_client, thread):
    admin_client.post("/admin/contextstore/contextblock/add/", {
        "thread": thread.pk, "name": "rules", "value": "Be kind.", "placement": "prefix", "order": 0})
    block = ContextBlock.objects.get()
    assert block.value == "Be kind." and block.token_count > 0
    assert AuditLog.objects.filter(action="block.create", actor_label="root").exists()


def test_session_metadata_must_stay_an_object_in_admin(admin_client, session):
    response = admin_client.post(f"/admin/contextstore/session/{session.pk}/change/", {
        "title": "t", "agent": "a", "metadata": "[1, 2]"})
    assert response.status_code == 200 and "JSON object" in response.content.decode()
    admin_client.post(f"/admin/contextstore/session/{session.pk}/change/", {
        "title": "Renamed", "agent": "helper", "metadata": '{"k": 1}'})
    session.refresh_from_db()
    assert session.title == "Renamed" and session.metadata == {"k": 1}


@pytest.fixture
def view_only_client(db) -> Client:
    """Staff who may look at everything in admin and change nothing."""
    from django.contrib.auth.models import Permission

    user = get_user_model().objects.create_user("viv", password="pw-for-tests-123", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    client = Client()
    client.force_login(user)
    return client


def test_staff_with_view_permission_only_cannot_run_actions_that_change_data(
        view_only_client, token, thread, session, actor):
    api_token, _ = token
    event_append(thread=thread, events=messages(4), actor=actor)
    collapse = collapse_create(thread=thread, start_position=1, end_position=2, summary_text="s", actor=actor)
    for url, action, pk in (
        ("/admin/contextstore/apitoken/", "revoke", api_token.pk),
        ("/admin/contextstore/session/", "archive", session.pk),
        ("/admin/contextstore/thread/", "clear_context", thread.pk),
        ("/admin/contextstore/collapse/", "undo", collapse.pk),
    ):
        assert view_only_client.get(url).status_code == 200
        view_only_client.post(url, {"action": action, "_selected_action": [pk]})
    api_token.refresh_from_db()
    session.refresh_from_db()
    collapse.refresh_from_db()
    assert api_token.revoked_at is None and not session.archived and collapse.undone_at is None
    assert not Event.objects.filter(thread=thread, status="cleared").exists()


def test_a_membership_cannot_be_moved_to_another_user_or_workspace(admin_client, workspace,
                                                                   other_workspace, user):
    membership = Membership.objects.create(workspace=workspace, user=user, role="viewer")
    admin_client.post(f"/admin/contextstore/membership/{membership.pk}/change/",
                      {"workspace": other_workspace.pk, "user": user.pk, "role": "editor"})
    assert list(Membership.objects.values_list("workspace__slug", "role")) == [("acme", "editor")]


def test_workspaces_are_renamed_and_deleted_through_audited_services(admin_client, thread, actor):
    workspace = thread.workspace
    event_append(thread=thread, events=messages(3), actor=actor)
    collapse_create(thread=thread, start_position=1, end_position=2, summary_text="s", actor=actor)
    admin_client.post(f"/admin/contextstore/workspace/{workspace.pk}/change/", {
        "name": "Acme Corp", "memberships-TOTAL_FORMS": 0, "memberships-INITIAL_FORMS": 0})
    workspace.refresh_from_db()
    assert workspace.name == "Acme Corp"
    admin_client.post(f"/admin/contextstore/workspace/{workspace.pk}/delete/", {"post": "yes"})
    assert not Workspace.objects.filter(pk=workspace.pk).exists() and not Event.objects.exists()
    assert set(AuditLog.objects.filter(actor_label="root").values_list("action", flat=True)) >= {
        "workspace.update", "workspace.delete", "session.delete"}


def test_a_session_with_a_collapse_can_be_deleted_in_admin(admin_client, session, thread, actor):
    event_append(thread=thread, events=messages(3), actor=actor)
    collapse_create(thread=thread, start_position=1, end_position=2, summary_text="s", actor=actor)
    confirm = admin_client.get(f"/admin/contextstore/session/{session.pk}/delete/")
    assert confirm.status_code == 200
    admin_client.post(f"/admin/contextstore/session/{session.pk}/delete/", {"post": "yes"})
    assert not Session.objects.exists() and not Event.objects.exists()


@pytest.mark.parametrize("slug", ["Acme", "ACME-1", "acme-"])
def test_a_workspace_slug_out_of_shape_is_refused_by_the_admin_and_the_token_command(admin_client,
                                                                                      slug):
    # workspacespec.check_slug, the doors' (services.workspaces.workspace_ensure trusts it)
    from django.core.management import CommandError, call_command

    response = admin_client.post("/admin/contextstore/workspace/add/", {
        "slug": slug, "name": "Acme", "memberships-TOTAL_FORMS": 0, "memberships-INITIAL_FORMS": 0})
    assert response.status_code == 200
    assert "A workspace slug is lower-case letters, digits and dashes." in response.content.decode()
    with pytest.raises(CommandError, match="lower-case letters, digits and dashes"):
        call_command("create_api_token", "--workspace", slug)
    assert not Workspace.objects.exists()


@pytest.mark.parametrize(("form", "field"), [
    ({"name": "   "}, "name"), ({"name": "n" * 201}, "name")])
def test_a_workspace_name_out_of_shape_is_refused_by_the_admin(admin_client, workspace, form, field):
    response = admin_client.post(f"/admin/contextstore/workspace/{workspace.pk}/change/", {
        **form, "memberships-TOTAL_FORMS": 0, "memberships-INITIAL_FORMS": 0})
    assert response.status_code == 200 and response.context["adminform"].form.errors[field]
    assert Workspace.objects.get(pk=workspace.pk).name == workspace.name
    assert not AuditLog.objects.filter(action="workspace.update").exists()


def test_a_membership_with_an_unknown_role_is_refused_by_the_admin(admin_client, workspace):
    user = get_user_model().objects.create_user("ann")
    response = admin_client.post("/admin/contextstore/membership/add/", {
        "workspace": workspace.pk, "user": user.pk, "role": "owner"})
    assert response.status_code == 200 and response.context["adminform"].form.errors["role"]
    assert not Membership.objects.filter(user=user).exists()
