"""The framework sessions API checks its bodies' shapes at the door (its serializers and
api.agent_sessions._blobs): each bad one is a 400 in the words the service used to answer
with, and nothing is written."""

import base64

import pytest

from contextstore.models import AuditLog, Event, ScopedState, Session, ThreadBlob

URL = "/api/v1/agent-sessions/"
WHO = {"app": "shop", "user_id": "ann", "key": "s1"}


def written() -> tuple:
    return (Session.objects.count(), Event.objects.count(), ThreadBlob.objects.count(),
            list(ScopedState.objects.values_list("state", flat=True)),
            AuditLog.objects.count())


@pytest.fixture
def made(api_client):
    assert api_client.post(URL, {**WHO, "state": {"step": 1}}, format="json").status_code == 201


def refused(response, message: str, place: str) -> None:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["code"], error["message"]) == ("invalid", message)
    assert place in error["details"]


@pytest.mark.parametrize("name", ["state", "app_state", "user_state", "metadata"])
def test_a_create_whose_state_or_metadata_is_not_an_object_is_refused(api_client, db, name):
    before = written()
    refused(api_client.post(URL, {**WHO, name: [1, 2]}, format="json"),
            f"{name} must be a JSON object.", name)
    assert written() == before


@pytest.mark.parametrize("name", ["state", "app_state", "user_state"])
def test_a_commit_whose_patch_is_not_an_object_is_refused(api_client, made, name):
    before = written()
    refused(api_client.post(URL + "commit/", {**WHO, name: "x", "events": [
        {"type": "Message", "content": "hi"}]}, format="json"),
            f"{name} must be a JSON object.", name)
    assert written() == before


def test_a_commit_with_too_many_blobs_or_a_blob_too_large_is_refused(api_client, made, settings,
                                                                    monkeypatch):
    from contextstore.api import agent_sessions as api
    from contextstore.services import agent_sessions as svc

    before = written()
    monkeypatch.setattr(api, "MAX_BLOBS_PER_COMMIT", 2)
    blob = {"key": "k", "data": base64.b64encode(b"abc").decode()}
    refused(api_client.post(URL + "commit/", {**WHO, "blobs": [blob] * 3}, format="json"),
            "At most 2 blobs per commit.", "blobs")
    monkeypatch.setattr(svc, "MAX_BLOB_BYTES", 2)
    refused(api_client.post(URL + "commit/", {**WHO, "blobs": [blob]}, format="json"),
            "A blob is at most 2 bytes.", "blobs")
    assert written() == before


def test_a_scope_patch_that_is_not_an_object_is_refused(api_client, made):
    before = written()
    refused(api_client.patch(URL + "scopes/", {"app": "shop", "scope": "app", "patch": [1]},
                             format="json"), "state must be a JSON object.", "state")
    assert written() == before


@pytest.mark.parametrize(("body", "message", "place"), [
    ({}, "Give keys or run_ids (one of them).", "keys"),
    ({"keys": ["s1"], "run_ids": ["r"]}, "Give keys or run_ids (one of them).", "keys"),
    ({"run_ids": ["r"], "keep_latest": True}, "keep_latest goes with keys, not run_ids.", "keep_latest"),
    ({"keys": ["s1"], "blob_prefixes": ["cp/"]},
     "Each blob prefix names the event's client id once: {client_id}.", "blob_prefixes"),
    ({"keys": ["s1"], "blob_prefixes": ["{client_id}/{client_id}"]},
     "Each blob prefix names the event's client id once: {client_id}.", "blob_prefixes"),
])
def test_a_bad_remove_is_refused(api_client, made, body, message, place):
    api_client.post(URL + "commit/", {**WHO, "events": [{"type": "Message", "content": "hi",
                                                         "client_id": "c1"}]}, format="json")
    before = written()
    refused(api_client.post(URL + "remove/", {"app": "shop", "user_id": "ann", **body},
                            format="json"), message, place)
    assert written() == before


@pytest.mark.parametrize(("path", "body", "place"), [
    ("delete/", {"app": "shop", "key_prefix": ""}, "key_prefix"),
    ("commit/", {**WHO, "blobs": [{"key": "", "data": ""}]}, "blobs"),
    ("commit/", {**WHO, "blobs": [{"key": "k" * 501, "data": ""}]}, "blobs"),
    ("commit/", {**WHO, "batch_id": "b" * 201}, "batch_id"),
    ("", {**WHO, "key": "s2", "thread": "a\x00b"}, "thread"),
    ("", {**WHO, "key": "s2", "thread": ""}, "thread"),
])
def test_names_and_ids_out_of_shape_are_refused_by_the_serializers(api_client, made, path, body,
                                                                   place):
    # (the service no longer checks these: the serializers' fields do)
    before = written()
    response = api_client.post(URL + path, body, format="json")
    assert response.status_code == 400, response.content
    assert place in response.json()["error"]["details"]
    assert written() == before
