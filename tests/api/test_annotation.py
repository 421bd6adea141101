"""/api/v1/score-configs/, /api/v1/annotation-queues/ and their items: configs checked at the
door, queues made from the workspace's configs, items added and completed by a token, every
score door (the scores API too) checking a configured name, another workspace's a 404."""

import pytest

from contextstore.models import AnnotationItem, Score
from contextstore.services.events import event_append

CALL = [{"type": "Message", "role": "user", "content": "hi"},
        {"type": "LLMCallStart", "data": {"model": "m"}},
        {"type": "LLMComplete", "data": {"model": "m"}, "content": "hello"}]


@pytest.fixture
def accuracy(api_client):
    answer = api_client.post("/api/v1/score-configs/", {"name": "accuracy", "data_type": "numeric",
                                                         "min_value": 0, "max_value": 1}, format="json")
    assert answer.status_code == 201, answer.json()
    return answer.json()


@pytest.fixture
def queue(api_client, accuracy):
    answer = api_client.post("/api/v1/annotation-queues/", {"name": "triage", "description": "first pass",
                                                            "score_config_ids": [accuracy["id"]]},
                             format="json")
    assert answer.status_code == 201, answer.json()
    return answer.json()


def test_a_config_is_made_listed_and_archived(api_client, accuracy):
    assert accuracy == {**accuracy, "name": "accuracy", "data_type": "numeric", "min_value": 0.0,
                        "max_value": 1.0, "categories": [], "archived": False}
    assert [c["name"] for c in api_client.get("/api/v1/score-configs/").json()["results"]] == ["accuracy"]
    answer = api_client.post(f"/api/v1/score-configs/{accuracy['id']}/archive/", {}, format="json")
    assert answer.json()["archived"] is True
    again = api_client.post("/api/v1/score-configs/", {"name": "accuracy", "data_type": "boolean"},
                            format="json")
    assert again.status_code == 409


@pytest.mark.parametrize("body", [
    {"name": "x", "data_type": "numeric", "min_value": 3, "max_value": 1},
    {"name": "x", "data_type": "categorical"},
    {"name": "x:y", "data_type": "boolean"},
    {"name": "x", "data_type": "boolean", "categories": ["a"]},
])
def test_a_bad_config_is_a_clear_400(api_client, body):
    answer = api_client.post("/api/v1/score-configs/", body, format="json")
    assert answer.status_code == 400 and answer.json()["error"]["message"]


def test_scores_through_the_api_are_checked_against_their_names_config(api_client, session, accuracy):
    url = f"/api/v1/sessions/{session.pk}/scores/"
    bad = api_client.post(url, {"name": "accuracy", "data_type": "numeric", "value": 3}, format="json")
    assert bad.status_code == 400
    assert bad.json()["error"]["message"] == "The score 'accuracy' is at most 1."
    wrong_type = api_client.post(url, {"name": "accuracy", "data_type": "boolean", "value": True},
                                 format="json")
    assert wrong_type.status_code == 400 and wrong_type.json()["error"]["details"] == {"data_type": "numeric"}
    assert api_client.post(url, {"name": "accuracy", "data_type": "numeric", "value": 0.5},
                           format="json").status_code == 201
    assert Score.objects.count() == 1


def test_items_are_added_listed_and_completed_by_a_token(api_client, queue, thread, actor):
    event_append(thread=thread, actor=actor, events=CALL)
    items_url = f"/api/v1/annotation-queues/{queue['id']}/items/"
    added = api_client.post(items_url, {"items": [{"session": thread.session_id},
                                                  {"thread": thread.pk, "seq": 3}]}, format="json")
    assert added.status_code == 201 and added.json() == {"added": 2}
    items = api_client.get(items_url).json()["results"]
    assert [(i["kind"], i["seq"], i["status"]) for i in items] == [("session", None, "pending"),
                                                                    ("call", 2, "pending")]
    call_item = items[1]["id"]
    refused = api_client.post(f"{items_url}{call_item}/complete/",
                              {"scores": [{"name": "accuracy", "value": 7}]}, format="json")
    assert refused.status_code == 400
    done = api_client.post(f"{items_url}{call_item}/complete/",
                           {"scores": [{"name": "accuracy", "value": 1, "comment": "right"}]}, format="json")
    assert done.status_code == 200, done.json()
    assert done.json()["item"]["status"] == "completed"
    assert done.json()["scores"][0] | {"id": 0, "created_at": ""} == {
        "id": 0, "session": thread.session_id, "thread": thread.pk, "seq": 2, "name": "accuracy",
        "data_type": "numeric", "value": 1.0, "comment": "right",
        "author": done.json()["scores"][0]["author"], "evaluator": None,  # a person's score
        "created_at": ""}
    again = api_client.post(f"{items_url}{call_item}/complete/", {"scores": []}, format="json")
    assert again.status_code == 409
    progress = api_client.get(f"/api/v1/annotation-queues/{queue['id']}/").json()["progress"]
    assert (progress["completed"], progress["total"]) == (1, 2)
    assert api_client.get(f"{items_url}?status=completed").json()["results"][0]["id"] == call_item


def test_a_queue_needs_the_workspaces_unarchived_configs(api_client, accuracy):
    missing = api_client.post("/api/v1/annotation-queues/", {"name": "q", "score_config_ids": [999999]},
                              format="json")
    assert missing.status_code == 404
    api_client.post(f"/api/v1/score-configs/{accuracy['id']}/archive/", {}, format="json")
    archived = api_client.post("/api/v1/annotation-queues/",
                               {"name": "q", "score_config_ids": [accuracy["id"]]}, format="json")
    assert archived.status_code == 409


def test_another_workspace_sees_none_of_it(other_client, read_client, queue, accuracy, session):
    qid = queue["id"]
    for url in (f"/api/v1/score-configs/{accuracy['id']}/", f"/api/v1/annotation-queues/{qid}/",
                f"/api/v1/annotation-queues/{qid}/items/"):
        assert other_client.get(url).status_code == 404
    assert other_client.post(f"/api/v1/annotation-queues/{qid}/items/",
                             {"items": [{"session": session.pk}]}, format="json").status_code == 404
    assert other_client.get("/api/v1/annotation-queues/").json()["results"] == []
    assert read_client.post(f"/api/v1/annotation-queues/{qid}/items/",
                            {"items": [{"session": session.pk}]}, format="json").status_code == 403
    assert AnnotationItem.objects.count() == 0


def test_the_schema_lists_the_annotation_operations(api_client):
    import json
    paths = json.loads(api_client.get("/api/schema/", HTTP_ACCEPT="application/json").content)["paths"]
    assert {"/api/v1/score-configs/", "/api/v1/annotation-queues/",
            "/api/v1/annotation-queues/{queue_pk}/items/",
            "/api/v1/annotation-queues/{queue_pk}/items/{id}/complete/"} <= set(paths)
