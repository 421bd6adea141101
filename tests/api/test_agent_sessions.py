"""The framework sessions API: identity, one-request reads, atomic conditional appends."""

import base64
import json

import pytest

from contextstore.models import AuditLog, Event, ScopedState, Session, ThreadBlob

URL = "/api/v1/agent-sessions/"
WHO = {"app": "shop", "user_id": "ann", "key": "s1"}


def create(client, **extra):
    return client.post(URL, {**WHO, **extra}, format="json")


def commit(client, headers=None, **payload):
    return client.post(URL + "commit/", {**WHO, **payload}, format="json", headers=headers or {})


def read(client, **params):
    return client.get(URL + "read/", {**WHO, **params})


def test_create_is_create_only_with_initial_state_and_first_thread(api_client):
    answer = create(api_client, state={"step": 1}, app_state={"theme": "dark"}, user_state={"lang": "fi"})
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert body["state"] == {"step": 1} and body["app_state"] == {"theme": "dark"}
    assert body["user_state"] == {"lang": "fi"} and body["thread"] and body["events"] == []
    again = create(api_client, state={"step": 2})
    assert again.status_code == 409 and again.json()["error"]["code"] == "session_exists"
    assert read(api_client).json()["state"] == {"step": 1}


def test_the_app_is_part_of_a_sessions_identity(api_client):
    assert create(api_client).status_code == 201
    assert api_client.post(URL, {**WHO, "app": "other"}, format="json").status_code == 201
    assert Session.objects.filter(key="s1", user_id="ann").count() == 2


def test_lookup_never_creates(api_client):
    assert read(api_client).status_code == 404
    assert not Session.objects.exists()


def test_commit_appends_events_and_patches_state_and_scopes_in_one_answer(api_client):
    create(api_client, state={"a": 1})
    answer = commit(api_client, headers={"If-Match": '"1"'},
                    events=[{"type": "Message", "role": "user", "content": "hi", "client_id": "e1",
                             "occurred_at": "2026-01-02T03:04:05Z"}],
                    state={"b": 2}, app_state={"x": 1}, user_state={"y": 1},
                    blobs=[{"key": "k", "data": base64.b64encode(b"\x00\xff").decode(), "meta": {"t": 1}}])
    assert answer.status_code == 200, answer.json()
    result = answer.json()
    assert result["revision"] == 2 and result["last_seq"] == 1
    assert result["events"][0]["client_id"] == "e1" and result["app_revision"] == 1
    body = read(api_client, limit=5, blob="k").json()
    assert body["state"] == {"a": 1, "b": 2} and body["app_state"] == {"x": 1}
    assert body["user_state"] == {"y": 1} and [e["content"] for e in body["events"]] == ["hi"]
    assert base64.b64decode(body["blobs"][0]["data"]) == b"\x00\xff"
    # Last activity follows the newest event's own time, not the server's clock.
    assert body["last_activity_at"] == "2026-01-02T03:04:05Z"


def test_a_stale_commit_changes_nothing(api_client):
    create(api_client, state={"a": 1})
    stale = commit(api_client, headers={"If-Match": '"0"'}, events=[{"type": "Message", "content": "x"}],
                   state={"a": 2}, user_state={"y": 1})
    assert stale.status_code == 412
    stale_history = commit(api_client, expected_last_seq=3, events=[{"type": "Message", "content": "x"}])
    assert stale_history.status_code == 412
    assert stale_history.json()["error"]["code"] == "stale_history"
    assert not Event.objects.exists() and not ScopedState.objects.exists()
    assert read(api_client).json()["state"] == {"a": 1}


def test_a_failing_part_rolls_back_the_whole_commit(api_client):
    create(api_client)
    bad = commit(api_client, events=[{"type": "Message", "content": "x"}], app_state={"x": 1},
                 blobs=[{"key": "k", "data": "not base64!"}])
    assert bad.status_code == 400
    bad = commit(api_client, events=[{"type": "Message", "content": "x"}, {"type": ""}], user_state={"x": 1})
    assert bad.status_code == 400
    assert not Event.objects.exists() and not ScopedState.objects.exists() and not ThreadBlob.objects.exists()


def test_a_replayed_batch_returns_the_first_answer_and_applies_nothing_twice(api_client):
    create(api_client)
    payload = {"events": [{"type": "Message", "content": "x"}], "app_state": {"n": 1}, "batch_id": "b1"}
    first = commit(api_client, **payload).json()
    assert commit(api_client, **payload).json() == first
    assert Event.objects.count() == 1 and ScopedState.objects.get().revision == 1
    other = commit(api_client, **{**payload, "app_state": {"n": 2}})
    assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_conflict"


def test_commit_can_create_the_session(api_client):
    assert commit(api_client, events=[{"type": "Message", "content": "x"}]).status_code == 404
    assert commit(api_client, create=True, events=[{"type": "Message", "content": "x"}]).status_code == 200
    assert read(api_client).json()["last_seq"] == 1


def test_read_bounds_events_by_count_time_client_id_and_data(api_client):
    create(api_client)
    commit(api_client, events=[
        {"type": "Message", "content": f"m{i}", "client_id": f"c{i}", "data": {"k": {"n": i % 2}},
         "occurred_at": f"2026-01-0{i + 1}T00:00:00Z"} for i in range(5)])
    contents = lambda **q: [e["content"] for e in read(api_client, **q).json()["events"]]  # noqa: E731
    assert contents(limit=2) == ["m3", "m4"]
    assert contents(after="2026-01-04T00:00:00Z") == ["m3", "m4"]
    assert contents(client_id="c2") == ["m2"]
    assert contents(data_contains=json.dumps({"k": {"n": 1}})) == ["m1", "m3"]
    assert read(api_client, data_contains="[").status_code == 400


def test_retract_takes_out_the_newest_event_and_keeps_it(api_client):
    create(api_client)
    commit(api_client, events=[{"type": "Message", "content": "a"}, {"type": "Message", "content": "b"}])
    retracted = api_client.post(URL + "retract/", WHO, format="json").json()["event"]
    assert retracted["content"] == "b" and retracted["status"] == "retracted"
    assert [e["content"] for e in read(api_client).json()["events"]] == ["a"]
    assert Event.objects.get(content="b").status == "retracted"
    assert AuditLog.objects.filter(action="event.retract").count() == 1
    api_client.post(URL + "retract/", WHO, format="json")
    assert api_client.post(URL + "retract/", WHO, format="json").json() == {"event": None}


def test_clear_and_delete(api_client):
    create(api_client)
    commit(api_client, events=[{"type": "Message", "content": "a"}])
    assert api_client.post(URL + "clear/", WHO, format="json").json() == {"cleared": 1}
    assert read(api_client).json()["events"] == []
    assert api_client.post(URL + "delete/", WHO, format="json").json() == {"deleted": 1}
    assert read(api_client).status_code == 404


def test_list_orders_by_last_activity_with_state_and_cursor_pages(api_client):
    for i in range(3):
        api_client.post(URL, {**WHO, "key": f"s{i}", "state": {"i": i}}, format="json")
        commit(api_client, key=f"s{i}", events=[{"type": "Message", "content": "x",
                                                 "occurred_at": f"2026-01-0{3 - i}T00:00:00Z"}])
    page = api_client.get(URL, {"app": "shop", "user_id": "ann", "limit": 2}).json()
    assert [(s["key"], s["state"]) for s in page["results"]] == [("s0", {"i": 0}), ("s1", {"i": 1})]
    rest = api_client.get(URL, {"app": "shop", "user_id": "ann", "cursor": page["next_cursor"]}).json()
    assert [s["key"] for s in rest["results"]] == ["s2"] and rest["next_cursor"] is None
    assert api_client.get(URL, {"app": "elsewhere"}).json()["results"] == []


def test_scopes_are_shared_across_sessions_and_revisioned(api_client):
    create(api_client)
    api_client.post(URL, {**WHO, "key": "s2", "user_id": "bob"}, format="json")
    commit(api_client, app_state={"a": 1}, user_state={"u": "ann"})
    bob = read(api_client, key="s2", user_id="bob").json()
    assert bob["app_state"] == {"a": 1} and bob["user_state"] == {}
    patched = api_client.patch(URL + "scopes/", {"app": "shop", "scope": "app", "patch": {"a": None, "b": 2}},
                               format="json").json()
    assert patched["app_state"] == {"b": 2} and patched["app_revision"] == 2
    assert ScopedState.objects.get(scope="app").revisions.count() == 2


def test_other_workspaces_see_nothing(api_client, other_client):
    create(api_client)
    assert other_client.get(URL + "read/", WHO).status_code == 404
    assert other_client.post(URL + "commit/", {**WHO, "events": []}, format="json").status_code == 404
    assert other_client.post(URL + "retract/", WHO, format="json").json() == {"event": None}


@pytest.mark.parametrize("path", ["commit/", "retract/", "clear/", "delete/"])
def test_a_read_token_cannot_write(read_client, path):
    assert read_client.post(URL + path, WHO, format="json").status_code == 403
