"""A sync's shapes are checked at the door (contextstore/syncspec.py), before the service takes
the thread's lock: each bad body is a 400 naming its place, in the words the service used to
answer with, and the thread is left as it was."""

import pytest

from contextstore.models import Event, Thread

GOOD = {"key": "a", "event": {"type": "Message", "role": "user", "content": "one"}}
KEY_MAX = 200 - 64 - 1


def snapshot(thread: Thread) -> tuple:
    thread.refresh_from_db()
    return (thread.revision, thread.state, thread.summary, thread.memory, thread.last_results,
            thread.extra, list(Event.objects.filter(thread=thread).values_list("seq", "status")))


@pytest.mark.parametrize(("body", "message", "place"), [
    ({"namespace": "a b"}, "namespace is required: letters, digits, . _ - (at most 64).", "namespace"),
    ({"namespace": "fw/x"}, "namespace is required: letters, digits, . _ - (at most 64).", "namespace"),
    ({"base_revision": "3"}, "base_revision must be a revision number or null.", "base_revision"),
    ({"base_revision": True}, None, "base_revision"),
    ({"upload_id": 7}, "upload_id must be a string of at most 64 characters.", "upload_id"),
    ({"upload_id": ""}, None, "upload_id"),
    ({"part": "0"}, "part must be 0 ≤ part < parts.", "part"),
    ({"part": 2, "parts": 2, "upload_id": "u"}, "part must be 0 ≤ part < parts.", "part"),
    ({"parts": 2}, "A save in several parts needs an upload_id.", "upload_id"),
    ({"items": {"a": GOOD}}, "items must be a list.", "items"),
    ({"items": [GOOD, ["a"]]}, "items[1] must be an object with key and event.", "items[1]"),
    ({"items": [{**GOOD, "seq": 1}]}, "items[0] must be an object with key and event.", "items[0]"),
    ({"items": [{**GOOD, "key": ""}]},
     f"items[0].key: a key is a non-empty string of at most {KEY_MAX} characters.", "items[0].key"),
    ({"items": [{**GOOD, "key": "k" * (KEY_MAX + 1)}]},
     f"items[0].key: a key is a non-empty string of at most {KEY_MAX} characters.", "items[0].key"),
    ({"items": [{**GOOD, "key": 5}]},
     f"items[0].key: a key is a non-empty string of at most {KEY_MAX} characters.", "items[0].key"),
    ({"items": [{**GOOD, "key": "a\x00b"}]},
     "items[0].key: names and ids cannot hold NUL characters (U+0000).", "items[0].key"),
    ({"removed": ["a\x00b"]}, None, "removed"),
    ({"items": [{**GOOD, "event": {**GOOD["event"], "client_id": "c"}}]},
     "items[0].event.client_id: the key identifies a synced item.", "items[0].event.client_id"),
    ({"items": [GOOD, {**GOOD, "event": {"type": "Message", "content": "two"}}]},
     "items[1].key 'a' appears twice in one save.", "items[1].key"),
    ({"removed": "a"}, None, "removed"),
    ({"removed": ["a", ""]}, None, "removed"),
    ({"state": [1]}, "state must be a JSON object.", "state"),
    ({"last_results": "done"}, "last_results must be a JSON object.", "last_results"),
    ({"memory": ["x"]}, "memory must be a list of objects.", "memory"),
])
def test_a_bad_save_is_a_400_at_the_door_and_changes_nothing(api_client, thread, thread_url, body,
                                                              message, place):
    api_client.post(f"{thread_url}sync/", {"namespace": "fw", "items": [GOOD], "state": {"n": 1}},
                    format="json")
    before = snapshot(thread)
    response = api_client.post(f"{thread_url}sync/", {"namespace": "fw", "items": [], **body},
                               format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    # (None: the serializer's words, which come first, as they always did)
    assert error["code"] == "invalid" and message in (None, error["message"])
    assert place in error["details"]
    assert snapshot(thread) == before


def test_a_summary_that_is_not_a_string_is_a_400(api_client, thread, thread_url):
    # (the serializer takes a number as its text; syncspec refuses what it cannot read as one)
    before = snapshot(thread)
    response = api_client.post(f"{thread_url}sync/", {"namespace": "fw", "summary": ["x"]},
                               format="json")
    assert response.status_code == 400
    assert snapshot(thread) == before


@pytest.mark.parametrize(("query", "message", "place"), [
    ({}, "namespace is required: letters, digits, . _ - (at most 64).", "namespace"),
    ({"namespace": "a b"}, "namespace is required: letters, digits, . _ - (at most 64).", "namespace"),
    ({"namespace": "n" * 65}, "namespace is required: letters, digits, . _ - (at most 64).", "namespace"),
    ({"namespace": "fw", "format": "openai"}, "format must be peteos or absent.", "format"),
])
def test_a_bad_load_is_a_400(api_client, thread_url, query, message, place):
    response = api_client.get(f"{thread_url}sync/", query)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["code"], error["message"]) == ("invalid", message) and place in error["details"]


def test_a_key_named_again_by_a_later_part_is_refused_and_applies_no_part(api_client, thread,
                                                                           thread_url):
    before = snapshot(thread)
    first = api_client.post(f"{thread_url}sync/", {"namespace": "fw", "items": [GOOD],
                                                   "upload_id": "u1", "part": 0, "parts": 2},
                            format="json")
    assert first.status_code == 202
    last = api_client.post(f"{thread_url}sync/", {"namespace": "fw", "items": [GOOD],
                                                  "upload_id": "u1", "part": 1, "parts": 2},
                           format="json")
    assert last.status_code == 400
    assert last.json()["error"]["message"] == "items[1].key 'a' appears twice in one save."
    assert snapshot(thread) == before
