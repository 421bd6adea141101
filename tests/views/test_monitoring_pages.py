"""Saved views on the list pages and the alerts page, as people use them: save the filters,
open, rename, share, make default, delete; a view whose filter no longer exists opens the page
with a notice; alert rules made (the secret shown once), checked, switched off and deleted; the
header's banner while one fires; viewers, other people and other workspaces kept out."""

import re

import pytest
from django.utils import timezone

from contextstore.models import AlertRule, SavedView
from contextstore.services.saved_views import saved_view_create
from tests.monitoring.conftest import call, make_thread

pytestmark = pytest.mark.django_db


def save(
    client, page: str = "sessions", name: str = "Billing", query: str = "agent=billing&errors=on", **extra
):
    return client.post("/views/saved/", {"page": page, "name": name, "query": query, **extra})


def test_filters_saved_from_the_session_list_reopen_it(editor_client, editor):
    response = save(editor_client, query="before=2026&agent=billing&errors=on&q=")
    view = SavedView.objects.get()
    assert (view.owner, view.page, view.query, view.shared) == (
        editor,
        "sessions",
        "agent=billing&errors=on",
        False,
    )
    assert response.status_code == 302 and response["Location"] == f"/?agent=billing&errors=on&view={view.pk}"
    page = editor_client.get(response["Location"])
    assert page.status_code == 200
    html = page.content.decode()
    assert f'href="/views/saved/{view.pk}/" aria-current="true"' in html and "Saved views: " in html
    opened = editor_client.get(f"/views/saved/{view.pk}/")
    assert opened["Location"] == f"/?agent=billing&errors=on&view={view.pk}"


def test_a_view_is_renamed_shared_made_default_and_deleted(editor_client, editor):
    save(editor_client)
    view = SavedView.objects.get()
    editor_client.post(f"/views/saved/{view.pk}/update/", {"name": "Billing errors"})
    editor_client.post(f"/views/saved/{view.pk}/update/", {"shared": "on"})
    editor_client.post(f"/views/saved/{view.pk}/update/", {"is_default": "on"})
    view.refresh_from_db()
    assert (view.name, view.shared, view.is_default) == ("Billing errors", True, True)
    # the default opens the page asked without filters; ?view=0 is the page without it
    assert editor_client.get("/")["Location"] == f"/?agent=billing&errors=on&view={view.pk}"
    assert editor_client.get("/?view=0").status_code == 200
    assert editor_client.get("/", HTTP_HX_REQUEST="true").status_code == 200  # the list's refresh
    assert save(editor_client, name="Billing errors").status_code == 409
    deleted = editor_client.post(f"/views/saved/{view.pk}/delete/")
    assert deleted["Location"] == "/?view=0" and not SavedView.objects.exists()
    assert editor_client.get("/").status_code == 200


def test_a_view_with_a_filter_that_no_longer_exists_opens_the_page_with_a_notice(
    editor_client, editor, workspace, actor
):
    view = saved_view_create(
        workspace=workspace,
        owner=editor,
        page="sessions",
        name="Old",
        query="agent=billing&colour=red&cost_min=abc&sort=-mood",
        actor=actor,
    )
    opened = editor_client.get(f"/views/saved/{view.pk}/")
    assert opened["Location"] == f"/?agent=billing&view={view.pk}"
    page = editor_client.get(opened["Location"])
    assert page.status_code == 200
    notice = re.search(
        r"<p class=\"notice\" role=\"status\" data-view-notice>(.*?)</p>", page.content.decode(), re.S
    ).group(1)
    assert "The filter “colour” no longer exists." in notice and "Cost from" in notice
    assert "sort order" in notice and "shown without them" in notice
    trends = saved_view_create(
        workspace=workspace, owner=editor, page="trends", name="T", query="days=14&group=agent", actor=actor
    )
    opened = editor_client.get(f"/views/saved/{trends.pk}/")
    assert opened["Location"] == f"/trends/?group=agent&view={trends.pk}"
    page = editor_client.get(opened["Location"])
    assert page.status_code == 200 and "“days=14” is no longer a choice." in page.content.decode()


def test_trends_and_store_keep_saved_views_too(editor_client):
    save(editor_client, page="trends", name="Week", query="days=7&group=agent", default="on")
    assert editor_client.get("/trends/")["Location"].startswith("/trends/?days=7&group=agent&view=")
    save(editor_client, page="store", name="Users", query="ns=users&ns=alice&deleted=1")
    view = SavedView.objects.get(page="store")
    assert view.query == "deleted=1&ns=users&ns=alice"  # the namespace's labels keep their order
    assert (
        editor_client.get(f"/views/saved/{view.pk}/")["Location"]
        == f"/store/?deleted=1&ns=users&ns=alice&view={view.pk}"
    )
    assert save(editor_client, page="cache-nowhere").status_code == 400
    assert save(editor_client, name="").status_code == 400


def test_private_views_are_their_owners_and_shared_ones_read_only_to_others(
    editor_client, viewer_client, viewer, workspace, editor, actor
):
    private = saved_view_create(
        workspace=workspace, owner=editor, page="sessions", name="Mine", query="", actor=actor
    )
    shared = saved_view_create(
        workspace=workspace,
        owner=editor,
        page="sessions",
        name="Ours",
        query="errors=on",
        shared=True,
        actor=actor,
    )
    assert viewer_client.get(f"/views/saved/{private.pk}/").status_code == 404
    assert viewer_client.get(f"/views/saved/{shared.pk}/").status_code == 302
    html = viewer_client.get("/?view=0").content.decode()
    assert "Ours" in html and "Mine" not in html and "by eddie" in html
    assert viewer_client.post(f"/views/saved/{shared.pk}/update/", {"name": "x"}).status_code == 404
    assert viewer_client.post(f"/views/saved/{shared.pk}/delete/").status_code == 404
    assert SavedView.objects.filter(pk=shared.pk, name="Ours").exists()


def test_another_workspace_sees_404s(outsider_client, editor, workspace, actor):
    view = saved_view_create(
        workspace=workspace, owner=editor, page="sessions", name="V", query="", shared=True, actor=actor
    )
    rule = AlertRule.objects.create(
        workspace=workspace, name="r", metric="cost", threshold=1, secret="s" * 64
    )
    assert outsider_client.get(f"/views/saved/{view.pk}/").status_code == 404
    for action in ("check", "toggle", "delete"):
        assert outsider_client.post(f"/alerts/rules/{rule.pk}/{action}/").status_code == 404
    assert "r" not in re.findall(r'data-rule="([^"]*)"', outsider_client.get("/alerts/").content.decode())


def test_an_editor_makes_a_rule_sees_its_secret_once_and_it_fires_into_the_banner(
    editor_client, workspace, actor
):
    made = editor_client.post(
        "/alerts/rules/",
        {
            "name": "Spend",
            "metric": "cost",
            "comparison": "gt",
            "threshold": "1",
            "window_minutes": "60",
            "webhook_url": "https://hooks.example.com/x",
            "saved_view": "",
        },
    )
    assert made.status_code == 302, made.content
    rule = AlertRule.objects.get()
    first = editor_client.get("/alerts/").content.decode()
    assert f'<code class="secret" data-secret>{rule.secret}</code>' in first
    assert rule.secret not in editor_client.get("/alerts/").content.decode()  # once
    assert "data-alert-banner" not in first
    call(make_thread(workspace, actor), actor, minutes_ago=0.5, cost=2.5, now=timezone.now())
    editor_client.post(f"/alerts/rules/{rule.pk}/check/")
    rule.refresh_from_db()
    assert rule.state == "firing" and rule.last_value == 2.5
    sessions = editor_client.get("/").content.decode()
    banner = re.search(r"<div class=\"alert-banner\".*?</div>", sessions, re.S).group(0)
    assert "1 alert firing" in banner and "Spend" in banner and "Cost (USD) above 1 over 1 hour" in banner
    history = editor_client.get("/alerts/").content.decode()
    assert 'data-event="firing"' in history and 'data-delivery="pending"' in history
    editor_client.post(f"/alerts/rules/{rule.pk}/toggle/")
    assert AlertRule.objects.get().enabled is False
    assert "data-alert-banner" not in editor_client.get("/").content.decode()  # off: not shown as firing
    editor_client.post(f"/alerts/rules/{rule.pk}/delete/")
    assert not AlertRule.objects.exists()


def test_a_bad_rule_is_refused_with_a_reason(editor_client, settings):
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE = False
    response = editor_client.post(
        "/alerts/rules/",
        {"name": "x", "metric": "cost", "threshold": "1", "webhook_url": "http://10.1.2.3/hook"},
    )
    assert response.status_code == 400 and "private, local or reserved" in response.content.decode()
    assert not AlertRule.objects.exists()


def test_a_viewer_sees_rules_but_cannot_change_them(viewer_client, workspace):
    rule = AlertRule.objects.create(
        workspace=workspace, name="r", metric="cost", threshold=1, secret="s" * 64
    )
    page = viewer_client.get("/alerts/").content.decode()
    assert 'data-rule="r"' in page and "Create rule" not in page and "s" * 64 not in page
    assert (
        viewer_client.post("/alerts/rules/", {"name": "x", "metric": "cost", "threshold": "1"}).status_code
        == 403
    )
    assert viewer_client.post(f"/alerts/rules/{rule.pk}/delete/").status_code == 403


def test_a_view_a_rule_is_scoped_to_cannot_be_deleted(editor_client, editor, workspace, actor):
    view = saved_view_create(
        workspace=workspace, owner=editor, page="sessions", name="V", query="agent=a", actor=actor
    )
    assert (
        editor_client.post(
            "/alerts/rules/", {"name": "x", "metric": "cost", "threshold": "1", "saved_view": str(view.pk)}
        ).status_code
        == 302
    )
    response = editor_client.post(f"/views/saved/{view.pk}/delete/")
    assert response.status_code == 409 and "alert rule" in response.content.decode()
    assert SavedView.objects.filter(pk=view.pk).exists()


def test_an_editor_changes_a_rules_condition_and_it_starts_again_from_ok(editor_client, workspace):
    rule = AlertRule.objects.create(
        workspace=workspace, name="r", metric="cost", threshold=1, secret="s" * 64, state="firing"
    )
    response = editor_client.post(
        f"/alerts/rules/{rule.pk}/update/",
        {"name": "Spend", "comparison": "gte", "threshold": "2.5", "window_minutes": "15"},
    )
    assert response.status_code == 302
    rule.refresh_from_db()
    assert (rule.name, rule.comparison, rule.threshold, rule.window_minutes, rule.state) == (
        "Spend", "gte", 2.5, 15, "ok"
    )
    bad = editor_client.post(f"/alerts/rules/{rule.pk}/update/", {"threshold": "lots"})
    assert bad.status_code == 400 and AlertRule.objects.get().threshold == 2.5
