import pytest

from contextstore.models import StateRevision


def test_get_state_returns_the_fields_and_an_etag(api_client, thread, thread_url):
    response = api_client.get(f"{thread_url}state/")
    assert response.status_code == 200
    assert response["ETag"] == '"0"'
    assert response.json() == {
        "state": {}, "memory": [], "iteration": 0, "current_input": None,
        "original_input": None, "max_history_size": 10, "summary": "", "revision": 0,
        "last_results": {},
    }


def test_put_replaces_and_patch_merges_with_if_match(api_client, thread, thread_url):
    put = api_client.put(f"{thread_url}state/", {"state": {"b": 1, "a": {"x": 1, "y": 2}},
                                                 "memory": [{"m": 1}], "reason": "init"},
                         format="json", HTTP_IF_MATCH='"0"')
    assert put.status_code == 200 and put["ETag"] == '"1"'
    assert list(put.json()["state"]) == ["b", "a"]
    patch = api_client.patch(f"{thread_url}state/", {"state": {"a": {"x": None, "z": 3}, "c": 4}},
                             format="json", HTTP_IF_MATCH=put["ETag"])
    assert patch.status_code == 200
    assert patch.json()["state"] == {"b": 1, "a": {"y": 2, "z": 3}, "c": 4}
    assert patch.json()["memory"] == [{"m": 1}]
    assert patch["ETag"] == '"2"'
    assert StateRevision.objects.get(thread=thread, revision=1).reason == "init"


def test_a_stale_if_match_is_412_and_writes_nothing(api_client, thread, thread_url):
    api_client.put(f"{thread_url}state/", {"state": {"v": 1}}, format="json")
    stale = api_client.put(f"{thread_url}state/", {"state": {"v": 2}}, format="json",
                           HTTP_IF_MATCH='"0"')
    assert stale.status_code == 412
    assert stale.json()["error"]["code"] == "stale_revision"
    assert stale.json()["error"]["details"] == {"current_revision": 1, "expected_revision": 0}
    thread.refresh_from_db()
    assert (thread.state, thread.revision) == ({"v": 1}, 1)


def test_a_write_without_if_match_is_last_write_wins_and_recorded(api_client, thread, thread_url):
    api_client.put(f"{thread_url}state/", {"state": {"v": 1}}, format="json")
    api_client.put(f"{thread_url}state/", {"state": {"v": 2}}, format="json", HTTP_IF_MATCH="*")
    revisions = api_client.get(f"{thread_url}state/revisions/").json()
    # r0 is the document the thread started from, kept by its first write
    assert [(r["revision"], r["state"]) for r in revisions["results"]] == [
        (0, {}), (1, {"v": 1}), (2, {"v": 2})]
    assert revisions["next"] is None


def test_patch_accepts_the_merge_patch_media_type(api_client, thread, thread_url):
    response = api_client.patch(f"{thread_url}state/", '{"state": {"k": "v"}}',
                                content_type="application/merge-patch+json")
    assert response.status_code == 200 and response.json()["state"] == {"k": "v"}


def test_bad_state_writes_are_400_and_change_nothing(api_client, thread, thread_url):
    for payload, header in (({"state": [1, 2]}, None), ({"memory": ["x"]}, None),
                            ({"state": {}}, "abc"), ([1], None)):
        extra = {"HTTP_IF_MATCH": header} if header else {}
        response = api_client.put(f"{thread_url}state/", payload, format="json", **extra)
        assert response.status_code == 400, payload
    thread.refresh_from_db()
    assert thread.revision == 0


def test_restore_writes_an_earlier_revision_as_a_new_one(api_client, thread, thread_url):
    api_client.put(f"{thread_url}state/", {"state": {"v": 1}}, format="json")
    api_client.put(f"{thread_url}state/", {"state": {"v": 2}}, format="json")
    restored = api_client.post(f"{thread_url}state/revisions/1/restore/")
    assert restored.status_code == 200
    assert restored.json()["state"] == {"v": 1} and restored["ETag"] == '"3"'
    stale = api_client.post(f"{thread_url}state/revisions/1/restore/", HTTP_IF_MATCH='"1"')
    assert stale.status_code == 412
    assert api_client.post(f"{thread_url}state/revisions/99/restore/").status_code == 404


def test_read_tokens_read_but_cannot_write(read_client, thread, thread_url):
    assert read_client.get(f"{thread_url}state/").status_code == 200
    response = read_client.put(f"{thread_url}state/", {"state": {"v": 1}}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "scope"
    assert read_client.post(f"{thread_url}events/", {"events": [{"type": "Message"}]},
                            format="json").status_code == 403
    thread.refresh_from_db()
    assert thread.revision == 0 and thread.event_count == 0


def test_the_summary_is_written_with_the_state_and_cleared_by_clear_context(api_client, thread,
                                                                            thread_url):
    response = api_client.put(f"{thread_url}state/", {"summary": "We chose the primary."},
                              format="json")
    assert response.status_code == 200 and response.json()["summary"] == "We chose the primary."
    context = api_client.get(f"{thread_url}context/").json()
    assert [m["section"] for m in context["messages"]] == ["summary"]
    assert api_client.post(f"{thread_url}clear-context/").status_code == 200
    assert api_client.get(f"{thread_url}state/").json()["summary"] == ""


@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize(("body", "message", "place"), [
    ({"state": [1, 2]}, "state must be a JSON object.", "state"),
    ({"state": "x"}, "state must be a JSON object.", "state"),
    ({"memory": ["x"]}, None, "memory"),
    ({"summary": ["x"]}, None, "summary"),
    ({"reason": {"why": 1}}, None, "reason"),
])
def test_a_state_write_out_of_shape_is_a_400_that_changes_nothing(api_client, thread, thread_url,
                                                                  method, body, message, place):
    # The door's checks (StateWriteSerializer, JSONObject): services.state trusts them.
    response = getattr(api_client, method)(f"{thread_url}state/", body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid" and message in (None, error["message"])
    assert place in error["details"]
    thread.refresh_from_db()
    assert (thread.revision, thread.state, thread.memory, thread.summary) == (0, {}, [], "")
    assert not StateRevision.objects.filter(thread=thread).exists()
