"""Evaluators through the API: create, change (a new version), enable and disable, the online
run's evaluations and the scores' provenance; bad settings (400, nothing written), another
workspace (404), a read token's scope."""

from datetime import timedelta

import pytest
from django.utils import timezone

from contextstore.models import Evaluation, Evaluator
from contextstore.services.evaluators import evaluation_run, evaluations_schedule
from contextstore.services.events import event_append

URL = "/api/v1/evaluators/"
REGEX = {"name": "asks-politely", "kind": "regex", "config": {"pattern": "please"}}


def test_create_read_and_change_an_evaluator(api_client):
    r = api_client.post(URL, REGEX, format="json")
    assert r.status_code == 201, r.content
    body = r.json()
    assert body | {"id": 0, "created_at": "", "updated_at": ""} == {
        "id": 0, "name": "asks-politely", "kind": "regex", "target": "call", "enabled": True,
        "sample_rate": 1.0, "filter_agent": "", "filter_model": "", "created_at": "", "updated_at": "",
        "version": {"number": 1, "model": "", "prompt": "",
                    "config": {"pattern": "please", "ignore_case": False, "must_match": True},
                    "author": body["version"]["author"], "created_at": body["version"]["created_at"]}}
    one = f"{URL}{body['id']}/"
    r = api_client.patch(one, {"sample_rate": 0.25, "enabled": False}, format="json")
    assert r.status_code == 200 and (r.json()["sample_rate"], r.json()["enabled"]) == (0.25, False)
    assert r.json()["version"]["number"] == 1  # settings of the run are not a new version
    r = api_client.patch(one, {"config": {"pattern": "thank", "ignore_case": True}}, format="json")
    assert r.json()["version"]["number"] == 2 and r.json()["version"]["config"]["ignore_case"] is True
    r = api_client.patch(one, {"config": {"ignore_case": False}}, format="json")  # merged key by key
    assert r.json()["version"]["config"] == {"pattern": "thank", "ignore_case": False, "must_match": True}
    versions = api_client.get(f"{one}versions/").json()[1:]
    assert [(v["number"], v["config"]["pattern"]) for v in versions] == [(2, "thank"), (1, "please")]
    assert [e["name"] for e in api_client.get(URL).json()["results"]] == ["asks-politely"]


def test_a_judge_is_created_with_its_model_and_prompt(api_client):
    r = api_client.post(URL, {"name": "helpful", "kind": "llm_judge", "model": "judge-1",
                              "prompt": "Rate {{output}}", "config": {"score_type": "numeric"},
                              "sample_rate": 0.1, "filter_agent": "helper"}, format="json")
    assert r.status_code == 201, r.content
    assert r.json()["version"] | {"author": "", "created_at": ""} == {
        "number": 1, "model": "judge-1", "prompt": "Rate {{output}}", "config": {"score_type": "numeric"},
        "author": "", "created_at": ""}


@pytest.mark.parametrize("body", [
    {**REGEX, "config": {"pattern": "("}},
    {**REGEX, "kind": "shell"},
    {**REGEX, "name": "a:b"},
    {**REGEX, "sample_rate": 1.5},
    {**REGEX, "target": "thread"},
    {"name": "j", "kind": "llm_judge", "prompt": "no output named", "model": "m"},
    {"name": "s", "kind": "json_schema", "config": {"schema": {"type": 3}}},
    {"name": "t", "kind": "tool_call", "config": {"check": "called"}},
    {"name": "c", "kind": "cost_limit", "config": {"max_cost": "cheap"}},
])
def test_bad_settings_are_400_and_write_nothing(api_client, body):
    r = api_client.post(URL, body, format="json")
    assert r.status_code == 400, r.content
    assert r.json()["error"]["message"]
    assert not Evaluator.objects.exists()


def test_a_name_taken_is_a_conflict(api_client):
    assert api_client.post(URL, REGEX, format="json").status_code == 201
    r = api_client.post(URL, REGEX, format="json")
    assert r.status_code == 409 and Evaluator.objects.count() == 1


def test_a_bad_change_is_400_and_keeps_the_version(api_client):
    pk = api_client.post(URL, REGEX, format="json").json()["id"]
    r = api_client.patch(f"{URL}{pk}/", {"config": {"pattern": "["}}, format="json")
    assert r.status_code == 400
    assert Evaluator.objects.get().versions.count() == 1


def test_another_workspace_sees_404_and_a_read_token_cannot_change(api_client, other_client, read_client):
    pk = api_client.post(URL, REGEX, format="json").json()["id"]
    for path in (f"{URL}{pk}/", f"{URL}{pk}/versions/", f"{URL}{pk}/evaluations/"):
        assert other_client.get(path).status_code == 404
    assert other_client.patch(f"{URL}{pk}/", {"enabled": False}, format="json").status_code == 404
    assert other_client.get(URL).json()["results"] == []
    assert read_client.get(f"{URL}{pk}/").status_code == 200
    assert read_client.post(URL, {**REGEX, "name": "x"}, format="json").status_code == 403
    assert read_client.patch(f"{URL}{pk}/", {"enabled": False}, format="json").status_code == 403


def test_the_online_runs_evaluations_and_the_scores_name_their_evaluator_and_version(
        api_client, session, thread, actor):
    pk = api_client.post(URL, REGEX, format="json").json()["id"]
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "m"}},
        {"type": "LLMOutput", "content": "Wait, please."},
        {"type": "LLMComplete", "data": {"model": "m"}}])
    evaluations_schedule(now=timezone.now() + timedelta(seconds=60))
    evaluation_run(evaluation_id=Evaluation.objects.get().pk)
    [row] = api_client.get(f"{URL}{pk}/evaluations/").json()
    assert (row["version"], row["status"], row["seq"], row["error"]) == (1, "done", 1, "")
    [score] = api_client.get(f"/api/v1/sessions/{session.pk}/scores/").json()["results"]
    assert score["evaluator"] == {"evaluator": pk, "version": 1, "evaluation": row["id"]}
    assert (score["id"], score["value"], score["name"]) == (row["score"], True, "asks-politely")
