"""Scores through the API: sessions and LLM calls, bad input (400, nothing written), another
workspace's objects (404), a read token's scope, and the session list's score filter."""

import pytest

from contextstore.models import Score
from contextstore.services.events import event_append

CALL = [{"type": "Message", "role": "user", "content": "hi"},
        {"type": "LLMCallStart", "data": {"model": "m"}},
        {"type": "LLMComplete", "data": {"model": "m"}}]


def test_score_a_session_and_a_call_then_list_and_filter(api_client, session, thread, actor):
    event_append(thread=thread, actor=actor, events=CALL)
    url = f"/api/v1/sessions/{session.pk}/scores/"
    r = api_client.post(url, {"name": "accuracy", "data_type": "numeric", "value": 0.8,
                              "comment": "by the grader"}, format="json")
    assert r.status_code == 201, r.content
    assert r.json() | {"id": 0, "created_at": ""} == {
        "id": 0, "session": session.pk, "thread": None, "seq": None, "name": "accuracy",
        "data_type": "numeric", "value": 0.8, "comment": "by the grader",
        "author": r.json()["author"], "evaluator": None, "created_at": ""}
    assert r.json()["author"].startswith("token:")
    call_url = f"/api/v1/threads/{thread.pk}/events/3/scores/"  # the LLMComplete's seq
    r = api_client.post(call_url, {"name": "ok", "data_type": "boolean", "value": True}, format="json")
    assert r.status_code == 201 and (r.json()["seq"], r.json()["value"]) == (2, True)
    # the session's list holds its calls' scores too (thread and seq say where)
    assert [(s["name"], s["seq"]) for s in api_client.get(url).json()["results"]] == [
        ("accuracy", None), ("ok", 2)]
    listed = api_client.get(f"/api/v1/threads/{thread.pk}/events/2/scores/").json()["results"]
    assert [(s["name"], s["value"]) for s in listed] == [("ok", True)]
    keys = lambda q: [s["key"] for s in api_client.get(f"/api/v1/sessions/?score={q}").json()["results"]]  # noqa: E731
    assert keys("accuracy:>=0.5") == [session.key] and keys("accuracy:>0.9") == []
    assert keys("ok:true") == [session.key]
    r = api_client.get("/api/v1/sessions/?score=accuracy:>high")
    assert r.status_code == 400 and "score" in r.json()["error"]["details"]


@pytest.mark.parametrize("body", [
    {"name": "q", "data_type": "numeric", "value": "NaN"},
    {"name": "q", "data_type": "numeric", "value": "1e999"},
    {"name": "q", "data_type": "numeric", "value": True},
    {"name": "q", "data_type": "categorical", "value": ""},
    {"name": "q", "data_type": "boolean", "value": "yes"},
    {"name": "q", "data_type": "stars", "value": 3},
    {"name": "a:b", "data_type": "numeric", "value": 1},
    {"data_type": "numeric", "value": 1},
    {"name": "q", "data_type": "numeric"},
])
def test_bad_scores_are_400_and_write_nothing(api_client, session, body):
    r = api_client.post(f"/api/v1/sessions/{session.pk}/scores/", body, format="json")
    assert r.status_code == 400, r.content
    assert r.json()["error"]["message"]
    assert not Score.objects.exists()


def test_nan_and_infinity_in_raw_json_are_refused(api_client, session):
    for raw in ('{"name": "q", "data_type": "numeric", "value": NaN}',
                '{"name": "q", "data_type": "numeric", "value": Infinity}',
                '{"name": "q", "data_type": "numeric", "value": 1e999}'):
        r = api_client.post(f"/api/v1/sessions/{session.pk}/scores/", raw,
                            content_type="application/json")
        assert r.status_code == 400, (raw, r.content)
    assert not Score.objects.exists()


def test_another_workspace_sees_nothing_and_a_read_token_cannot_score(
        api_client, other_client, read_client, session, thread, actor):
    event_append(thread=thread, actor=actor, events=CALL)
    body = {"name": "q", "data_type": "numeric", "value": 1}
    api_client.post(f"/api/v1/sessions/{session.pk}/scores/", body, format="json")
    for url in (f"/api/v1/sessions/{session.pk}/scores/", f"/api/v1/threads/{thread.pk}/events/2/scores/"):
        assert other_client.get(url).status_code == 404
        assert other_client.post(url, body, format="json").status_code == 404
        assert read_client.post(url, body, format="json").status_code == 403
    assert other_client.get("/api/v1/sessions/?score=q").json()["results"] == []
    assert len(read_client.get(f"/api/v1/sessions/{session.pk}/scores/").json()["results"]) == 1
    assert api_client.get(f"/api/v1/threads/{thread.pk}/events/1/scores/").status_code == 404  # no call
    assert Score.objects.count() == 1
