"""Saved views and alerts through the API: made, listed, changed and deleted by a token of the
workspace; the webhook secret in the answer that made the rule and never after; another
workspace's objects are 404s; bad input is a 400 that changes nothing; all in the schema."""

import pytest
from django.contrib.auth import get_user_model

from contextstore.models import AlertEvent, AlertRule, SavedView
from contextstore.services.alerts import alert_rule_evaluate
from contextstore.services.workspaces import api_token_create
from tests.api.conftest import client_for
from tests.monitoring.conftest import NOW, call, make_thread

pytestmark = pytest.mark.django_db


@pytest.fixture
def person_client(workspace, actor):
    """A write token made by a person (saved views belong to people)."""
    user = get_user_model().objects.create_user("tia")
    return client_for(api_token_create(workspace=workspace, name="t", actor=actor, created_by=user)[1]), user


def test_a_saved_view_is_made_normalised_renamed_made_default_and_deleted(person_client):
    api, user = person_client
    made = api.post(
        "/api/v1/saved-views/",
        {"page": "sessions", "name": "Errors", "query": "?errors=on&before=x&agent=billing&q="},
        format="json",
    )
    assert made.status_code == 201, made.content
    view = made.json()
    assert view["query"] == "agent=billing&errors=on" and view["owner"] == "tia" and not view["shared"]
    again = api.post("/api/v1/saved-views/", {"page": "sessions", "name": "Errors"}, format="json")
    assert again.status_code == 409
    changed = api.patch(
        f"/api/v1/saved-views/{view['id']}/", {"name": "Billing errors", "is_default": True}, format="json"
    )
    assert (
        changed.status_code == 200
        and changed.json()["name"] == "Billing errors"
        and changed.json()["is_default"]
    )
    second = api.post(
        "/api/v1/saved-views/", {"page": "sessions", "name": "All", "is_default": True}, format="json"
    ).json()
    assert SavedView.objects.get(pk=view["id"]).is_default is False  # one default per person and page
    assert SavedView.objects.get(pk=second["id"]).is_default is True
    assert [v["name"] for v in api.get("/api/v1/saved-views/").json()["results"]] == ["Billing errors", "All"]
    assert api.delete(f"/api/v1/saved-views/{view['id']}/").status_code == 204
    assert not SavedView.objects.filter(pk=view["id"]).exists()


def test_bad_saved_view_input_is_a_400(person_client):
    api, _ = person_client
    for bad in (
        {"page": "nowhere", "name": "x"},
        {"page": "sessions", "name": ""},
        {"page": "sessions", "name": "x" * 101},
        {"page": "sessions", "name": "x", "query": "a" * 2001},
    ):
        assert api.post("/api/v1/saved-views/", bad, format="json").status_code == 400
    assert SavedView.objects.count() == 0


def test_a_token_of_no_person_sees_shared_views_and_cannot_save(api_client, workspace, actor):
    owner = get_user_model().objects.create_user("ann")
    SavedView.objects.create(workspace=workspace, owner=owner, page="trends", name="shared", shared=True)
    SavedView.objects.create(workspace=workspace, owner=owner, page="trends", name="private")
    assert [v["name"] for v in api_client.get("/api/v1/saved-views/").json()["results"]] == ["shared"]
    assert (
        api_client.post("/api/v1/saved-views/", {"page": "trends", "name": "x"}, format="json").status_code
        == 403
    )
    shared = SavedView.objects.get(name="shared")
    assert (
        api_client.patch(f"/api/v1/saved-views/{shared.pk}/", {"name": "y"}, format="json").status_code == 404
    )
    assert api_client.delete(f"/api/v1/saved-views/{shared.pk}/").status_code == 404


def test_an_alert_rule_shows_its_secret_once(api_client, settings):
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE = False
    made = api_client.post(
        "/api/v1/alert-rules/",
        {
            "name": "spend",
            "metric": "cost",
            "comparison": "gte",
            "threshold": 5,
            "window_minutes": 15,
            "webhook_url": "https://hooks.example.com/T000/secret-path",
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    rule = made.json()
    assert len(rule["secret"]) == 64 and rule["webhook_host"] == "hooks.example.com"
    assert rule["state"] == "ok" and rule["condition"] == "Cost (USD) at or above 5 over 15 minutes"
    assert AlertRule.objects.get(pk=rule["id"]).secret == rule["secret"]  # stored as it is, to sign with
    shown = api_client.get(f"/api/v1/alert-rules/{rule['id']}/").json()
    assert "secret" not in shown and "webhook_url" not in shown
    assert rule["secret"] not in str(api_client.get("/api/v1/alert-rules/").content)


@pytest.mark.parametrize(
    "bad",
    [
        {"metric": "vibes"},
        {"threshold": "NaN"},
        {"threshold": "Infinity"},
        {"window_minutes": 7},
        {"comparison": "eq"},
        {"webhook_url": "ftp://x.example.com/"},
        {"webhook_url": "http://127.0.0.1:9/"},
        {"webhook_url": "http://169.254.169.254/"},
        {"webhook_url": "https://hooks.example.com:99999/"},
        {"threshold": 1e16},
        {"saved_view": 0},
    ],
)
def test_bad_alert_rule_input_is_a_400_that_makes_nothing(api_client, bad, settings):
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE = False
    data = {"name": "r", "metric": "cost", "threshold": 1, **bad}
    response = api_client.post("/api/v1/alert-rules/", data, format="json")
    assert response.status_code == 400, response.content
    assert AlertRule.objects.count() == 0


def test_a_rule_scoped_to_a_view_that_does_not_exist_is_a_404(api_client):
    response = api_client.post(
        "/api/v1/alert-rules/",
        {"name": "r", "metric": "cost", "threshold": 1, "saved_view": 999999},
        format="json",
    )
    assert response.status_code == 404 and AlertRule.objects.count() == 0


def test_a_rule_is_changed_and_deleted_and_its_events_listed(api_client, workspace, actor):
    rule = api_client.post(
        "/api/v1/alert-rules/", {"name": "r", "metric": "cost", "threshold": 1}, format="json"
    ).json()
    call(make_thread(workspace, actor), actor, minutes_ago=5, cost=2.0)
    alert_rule_evaluate(rule=AlertRule.objects.get(pk=rule["id"]), now=NOW)
    changed = api_client.patch(f"/api/v1/alert-rules/{rule['id']}/", {"enabled": False}, format="json")
    assert changed.status_code == 200 and changed.json()["enabled"] is False
    events = api_client.get(f"/api/v1/alert-events/?rule={rule['id']}").json()["results"]
    assert [(e["kind"], e["value"], e["delivery"], e["rule_name"]) for e in events] == [
        ("firing", 2.0, "none", "r")
    ]
    assert api_client.get("/api/v1/alert-events/?rule=abc").status_code == 400
    assert api_client.get("/api/v1/alert-events/?rule=-3").json()["results"] == []
    assert api_client.get(f"/api/v1/alert-events/?rule={2**70}").json()["results"] == []
    assert api_client.delete(f"/api/v1/alert-rules/{rule['id']}/").status_code == 204
    assert AlertEvent.objects.count() == 0


def test_a_read_token_reads_but_cannot_change(read_client):
    assert read_client.get("/api/v1/alert-rules/").status_code == 200
    assert (
        read_client.post(
            "/api/v1/alert-rules/", {"name": "r", "metric": "cost", "threshold": 1}, format="json"
        ).status_code
        == 403
    )


def test_another_workspace_sees_404s(person_client, other_client, workspace, actor):
    api, user = person_client
    view = api.post(
        "/api/v1/saved-views/", {"page": "trends", "name": "v", "shared": True}, format="json"
    ).json()
    rule = api.post(
        "/api/v1/alert-rules/",
        {"name": "r", "metric": "cost", "threshold": 0, "comparison": "gte"},
        format="json",
    ).json()
    alert_rule_evaluate(rule=AlertRule.objects.get(pk=rule["id"]), now=NOW)
    event = AlertEvent.objects.get()
    for url in (
        f"/api/v1/saved-views/{view['id']}/",
        f"/api/v1/alert-rules/{rule['id']}/",
        f"/api/v1/alert-events/{event.pk}/",
    ):
        assert other_client.get(url).status_code == 404
        assert other_client.delete(url).status_code in (404, 405)
    assert (
        other_client.patch(
            f"/api/v1/alert-rules/{rule['id']}/", {"enabled": False}, format="json"
        ).status_code
        == 404
    )
    assert other_client.get("/api/v1/alert-events/").json()["results"] == []
    # a rule may not be scoped to another workspace's view
    other = other_client.post(
        "/api/v1/alert-rules/",
        {"name": "r", "metric": "cost", "threshold": 0, "saved_view": view["id"]},
        format="json",
    )
    assert other.status_code == 404


def test_the_schema_lists_the_endpoints(api_client):
    schema = api_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    for path in (
        "/api/v1/saved-views/",
        "/api/v1/saved-views/{id}/",
        "/api/v1/alert-rules/",
        "/api/v1/alert-rules/{id}/",
        "/api/v1/alert-events/",
        "/api/v1/alert-events/{id}/",
    ):
        assert path in schema["paths"], path
    created = schema["paths"]["/api/v1/alert-rules/"]["post"]["responses"]["201"]
    ref = created["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert "secret" in schema["components"]["schemas"][ref]["properties"]


def test_a_local_receiver_on_any_port_is_accepted_where_private_addresses_are_allowed(api_client, settings):
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE = True
    made = api_client.post(
        "/api/v1/alert-rules/",
        {"name": "r", "metric": "cost", "threshold": 1, "webhook_url": "http://127.0.0.1:45678/hook"},
        format="json",
    )
    assert made.status_code == 201 and made.json()["webhook_host"] == "127.0.0.1"
