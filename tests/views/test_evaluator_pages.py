"""Evaluators in the dashboard: create one of each kind, edit (a new version), enable and
disable, the evaluations with a failure's error, a score's link to the version that gave it;
viewers read only, another workspace is a 404; the admin lists them."""

from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from contextstore.models import Evaluation, Evaluator, Score
from contextstore.services.evaluators import evaluation_run, evaluations_schedule
from contextstore.services.events import event_append

XSS = "<img src=x onerror=alert(1)>"
REGEX = {"kind": "regex", "name": "asks-politely", "target": "call", "sample_rate": "1",
         "pattern": "please", "ignore_case": "on"}


def run_online():
    evaluations_schedule(now=timezone.now() + timedelta(seconds=60))
    for pk in Evaluation.objects.filter(status="queued").values_list("pk", flat=True):
        evaluation_run(evaluation_id=pk)


def call(thread, actor, reply="Wait, please."):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}},
        {"type": "LLMOutput", "content": reply},
        {"type": "LLMComplete", "data": {"model": "m"}}])


def test_the_new_page_offers_each_kind_then_its_fields(editor_client, workspace):
    html = editor_client.get("/evaluators/new/").content.decode()
    for kind in Evaluator.Kind.values:
        assert f"?kind={kind}" in html
    html = editor_client.get("/evaluators/new/?kind=llm_judge").content.decode()
    assert 'name="prompt"' in html and 'name="model"' in html and 'name="pattern"' not in html
    assert "No judge endpoint is configured" in html


@pytest.mark.parametrize(("fields", "config"), [
    (REGEX, {"pattern": "please", "ignore_case": True, "must_match": True}),
    ({"kind": "json_schema", "name": "json", "schema": '{"type": "object"}'}, {"schema": {"type": "object"}}),
    ({"kind": "tool_call", "name": "searched", "check": "called", "tool": "search",
      "arguments": '{"lang": "en"}'}, {"check": "called", "tool": "search", "arguments": {"lang": "en"}}),
    ({"kind": "cost_limit", "name": "cheap", "max_cost": "0.05"}, {"max_cost": 0.05}),
    ({"kind": "latency_limit", "name": "fast", "max_ms": "1500"}, {"max_ms": 1500.0}),
    ({"kind": "llm_judge", "name": "tone", "model": "judge-1", "prompt": "Rate {{output}}",
      "score_type": "categorical", "categories": "good, bad"},
     {"score_type": "categorical", "categories": ["good", "bad"]}),
])
def test_an_editor_creates_an_evaluator_of_each_kind(editor_client, workspace, fields, config):
    response = editor_client.post("/evaluators/new/", {"sample_rate": "1", **fields})
    evaluator = Evaluator.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/evaluators/{evaluator.pk}/"
    assert (evaluator.workspace, evaluator.kind, evaluator.latest.config) == (
        workspace, fields["kind"], config)


def test_a_bad_setting_is_shown_and_nothing_is_made(editor_client, workspace):
    response = editor_client.post("/evaluators/new/", {**REGEX, "pattern": "(unclosed"})
    assert response.status_code == 400
    assert "The pattern is not a regular expression" in response.content.decode()
    assert not Evaluator.objects.exists()
    response = editor_client.post("/evaluators/new/", {"kind": "json_schema", "name": "j", "sample_rate": "1",
                                                       "schema": "{not json"})
    assert response.status_code == 400 and "schema is not JSON" in response.content.decode()


def test_an_edit_makes_a_new_version_and_the_page_lists_both(editor_client, workspace):
    editor_client.post("/evaluators/new/", REGEX)
    evaluator = Evaluator.objects.get()
    response = editor_client.post(f"/evaluators/{evaluator.pk}/", {**REGEX, "pattern": "thank you"})
    assert response.status_code == 302
    assert [v.config["pattern"] for v in evaluator.versions.all()] == ["thank you", "please"]
    html = editor_client.get(f"/evaluators/{evaluator.pk}/").content.decode()
    assert 'id="v2"' in html and 'id="v1"' in html and "current" in html
    editor_client.post(f"/evaluators/{evaluator.pk}/",
                       {**REGEX, "pattern": "thank you", "sample_rate": "0.5"})
    evaluator.refresh_from_db()
    assert evaluator.versions.count() == 2 and evaluator.sample_rate == 0.5


def test_enable_and_disable(editor_client, workspace):
    editor_client.post("/evaluators/new/", REGEX)
    evaluator = Evaluator.objects.get()
    response = editor_client.post(f"/evaluators/{evaluator.pk}/toggle/", {"next": "list"})
    assert response["Location"] == "/evaluators/"
    evaluator.refresh_from_db()
    assert not evaluator.enabled
    assert 'aria-label="Enable asks-politely"' in editor_client.get("/evaluators/").content.decode()
    editor_client.post(f"/evaluators/{evaluator.pk}/toggle/")
    evaluator.refresh_from_db()
    assert evaluator.enabled


def test_a_score_links_to_the_version_that_gave_it_and_the_evaluator_page_shows_it(
        editor_client, workspace, session, thread, actor):
    editor_client.post("/evaluators/new/", REGEX)
    evaluator = Evaluator.objects.get()
    call(thread, actor)
    run_online()
    html = editor_client.get(f"/sessions/{session.pk}/").content.decode()
    assert f'href="/evaluators/{evaluator.pk}/#v1">evaluator asks-politely v1</a>' in html
    page = editor_client.get(f"/evaluators/{evaluator.pk}/").content.decode()
    assert f"/threads/{thread.pk}/?around=1#e1" in page and "The pattern was found" in page
    editor_client.post(f"/evaluators/{evaluator.pk}/", {**REGEX, "pattern": "wait"})  # version 2
    row = editor_client.get("/evaluators/").content.decode().split('data-evaluator="asks-politely"')[1]
    assert ">v2</a>" in row and '<td class="num">1</td>' in row  # one scored, whatever the versions


def test_a_failed_judge_shows_its_error_and_the_prompt_escaped(
        editor_client, workspace, thread, actor, settings):
    settings.PLAYGROUND_BASE_URL = ""
    editor_client.post("/evaluators/new/", {"kind": "llm_judge", "name": "tone", "sample_rate": "1",
                                            "model": "j", "prompt": f"{XSS} {{{{output}}}}",
                                            "score_type": "numeric"})
    evaluator = Evaluator.objects.get()
    call(thread, actor)
    run_online()
    assert not Score.objects.exists()
    html = editor_client.get(f"/evaluators/{evaluator.pk}/").content.decode()
    assert "failed" in html and "No judge endpoint is configured (PLAYGROUND_BASE_URL)." in html
    assert XSS not in html and "&lt;img src=x" in html
    assert '<span class="badge bad">1</span>' in editor_client.get("/evaluators/").content.decode()


def test_viewers_read_and_cannot_change(editor_client, viewer_client, workspace):
    editor_client.post("/evaluators/new/", REGEX)
    evaluator = Evaluator.objects.get()
    assert viewer_client.get(f"/evaluators/{evaluator.pk}/").status_code == 200
    assert 'id="evaluator-form"' not in viewer_client.get(f"/evaluators/{evaluator.pk}/").content.decode()
    assert viewer_client.post(f"/evaluators/{evaluator.pk}/toggle/").status_code == 403
    assert viewer_client.post(f"/evaluators/{evaluator.pk}/", {**REGEX, "pattern": "x"}).status_code == 403
    assert viewer_client.post("/evaluators/new/", {**REGEX, "name": "other"}).status_code == 403
    assert Evaluator.objects.count() == 1 and evaluator.versions.count() == 1


def test_another_workspace_sees_404(editor_client, outsider_client, workspace):
    editor_client.post("/evaluators/new/", REGEX)
    evaluator = Evaluator.objects.get()
    assert outsider_client.get(f"/evaluators/{evaluator.pk}/").status_code == 404
    assert outsider_client.post(f"/evaluators/{evaluator.pk}/toggle/").status_code == 404
    assert "asks-politely" not in outsider_client.get("/evaluators/").content.decode()


def test_the_admin_lists_evaluators_and_evaluations_and_disables_through_the_service(
        editor_client, workspace, thread, actor):
    editor_client.post("/evaluators/new/", REGEX)
    call(thread, actor)
    run_online()
    root = Client()
    root.force_login(get_user_model().objects.create_superuser("root", password="pw-for-tests-123"))
    assert admin.site.is_registered(Evaluator) and admin.site.is_registered(Evaluation)
    assert "asks-politely" in root.get("/admin/contextstore/evaluator/?q=asks").content.decode()
    assert root.get("/admin/contextstore/evaluation/").status_code == 200
    evaluator = Evaluator.objects.get()
    assert root.get(f"/admin/contextstore/evaluator/{evaluator.pk}/change/").status_code == 200
    root.post("/admin/contextstore/evaluator/", {"action": "disable", "_selected_action": [evaluator.pk]})
    evaluator.refresh_from_db()
    assert not evaluator.enabled
