"""/api/v1/experiments/: make, run and read experiments and their results (services/experiments.py)."""

import pytest

from contextstore.selectors.calls import llm_call_at
from contextstore.services.datasets import dataset_add_call, dataset_ensure
from contextstore.services.events import event_append
from contextstore.services.experiments import experiment_run
from tests.services.test_evaluate import make as make_version


@pytest.fixture
def dataset(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "gpt-4o",
                                          "messages": [{"role": "user", "content": "Hi"}]}},
        {"type": "LLMComplete", "data": {"model": "gpt-4o", "input_tokens": 10, "output_tokens": 2}},
        {"type": "LLMOutput", "role": "assistant", "content": "Replayed answer to: Hi"}])
    return dataset_add_call(dataset_name="ci", thread=thread, call=llm_call_at(thread=thread, seq=1),
                            actor=actor).dataset


def test_a_token_makes_runs_and_reads_an_experiment(api_client, dataset, endpoint):
    made = api_client.post("/api/v1/experiments/", {
        "dataset": dataset.pk, "name": "mini", "model": "gpt-4o-mini", "params": {"temperature": 0},
        "evaluators": ["builtin:exact_match"]}, format="json")
    assert made.status_code == 201, made.json()
    experiment = made.json()
    assert (experiment["status"], experiment["model"], experiment["params"], experiment["baseline"]) == (
        "draft", "gpt-4o-mini", {"temperature": 0}, None)
    ran = api_client.post(f"/api/v1/experiments/{experiment['id']}/run/")
    assert ran.status_code == 202 and ran.json()["status"] == "queued" and ran.json()["item_count"] == 1
    again = api_client.post(f"/api/v1/experiments/{experiment['id']}/run/")
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    experiment_run(experiment_id=experiment["id"])  # the worker's part
    detail = api_client.get(f"/api/v1/experiments/{experiment['id']}/").json()
    assert (detail["status"], detail["done_count"], detail["summary"]["ok"]) == ("done", 1, 1)
    assert detail["summary"]["scores"][0]["evaluator"] == "builtin:exact_match"
    assert detail["summary"]["scores"][0]["average"] == 1.0  # the fake answers what was expected
    [result] = api_client.get(f"/api/v1/experiments/{experiment['id']}/results/").json()["results"]
    assert result["output"] == "Replayed answer to: Hi" and result["status"] == "ok"
    assert result["request"] == {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}],
                                 "temperature": 0}
    assert [(s["target"], s["evaluator"], s["string_value"]) for s in result["scores"]] == [
        ("output", "builtin:exact_match", "true")]
    listed = api_client.get("/api/v1/experiments/").json()["results"]
    assert [e["id"] for e in listed] == [experiment["id"]]


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "x", "params": {"temperature": 5}}, "temperature"),
    ({"name": "x", "params": {"logit_bias": {}}}, "params"),
    ({"name": "x", "evaluators": ["rm -rf"]}, "evaluators"),
    ({"name": " "}, "name"),
])
def test_a_bad_variant_is_a_400_naming_its_field(api_client, dataset, body, field):
    answer = api_client.post("/api/v1/experiments/", {"dataset": dataset.pk, **body}, format="json")
    assert answer.status_code == 400 and field in answer.json()["error"]["details"]


def test_another_workspace_sees_nothing_and_a_read_token_changes_nothing(
        api_client, read_client, other_client, other_workspace, dataset):
    experiment = api_client.post("/api/v1/experiments/", {"dataset": dataset.pk, "name": "x"},
                                 format="json").json()
    base = f"/api/v1/experiments/{experiment['id']}/"
    for url in (base, base + "results/"):
        assert other_client.get(url).status_code == 404
    assert other_client.post(f"/api/v1/experiments/{experiment['id']}/run/").status_code == 404
    assert other_client.get("/api/v1/experiments/").json()["results"] == []
    made = other_client.post("/api/v1/experiments/", {"dataset": dataset.pk, "name": "x"}, format="json")
    assert made.status_code == 404
    theirs = dataset_ensure(workspace=other_workspace, name="theirs")
    assert api_client.post("/api/v1/experiments/", {"dataset": theirs.pk, "name": "x"},
                           format="json").status_code == 404
    assert read_client.post("/api/v1/experiments/", {"dataset": dataset.pk, "name": "y"},
                            format="json").status_code == 403
    assert read_client.get(f"/api/v1/experiments/{experiment['id']}/").status_code == 200


def test_the_experiments_are_in_the_openapi_schema(api_client):
    schema = api_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    assert {"get", "post"} <= set(paths["/api/v1/experiments/"])
    assert "post" in paths["/api/v1/experiments/{id}/run/"]
    assert "get" in paths["/api/v1/experiments/{id}/results/"]


def test_an_evaluator_of_another_workspace_is_a_404(api_client, dataset, actor, other_workspace, workspace):
    theirs = make_version(other_workspace, actor, "regex", name="theirs", config={"pattern": "x"}).evaluator
    answer = api_client.post("/api/v1/experiments/", {"dataset": dataset.pk, "name": "x",
                                                      "evaluators": [str(theirs.pk)]}, format="json")
    assert answer.status_code == 404 and str(theirs.pk) in answer.json()["error"]["message"]
    mine = make_version(workspace, actor, "regex", name="mine", config={"pattern": "x"}).evaluator
    body = {"dataset": dataset.pk, "name": "x", "evaluators": [mine.pk, "builtin:similarity"]}
    made = api_client.post("/api/v1/experiments/", body, format="json")
    assert made.status_code == 201 and made.json()["evaluators"] == [str(mine.pk), "builtin:similarity"]
