"""The shape checks that moved out of the services, at each door that now holds them: the same
400 and message as when the service checked, and nothing written (tests/test_shape_boundary.py
lists what the services still refuse)."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils.html import escape

from contextstore.models import (
    Comment,
    ContextBlock,
    Dataset,
    Memory,
    ProviderState,
    Score,
    Session,
    ShareLink,
)
from contextstore.services.comments import comment_add
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from tests.api.conftest import client_for
from tests.conftest import messages

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def api_client(token):
    return client_for(token[1])


@pytest.fixture
def admin_client(db) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="pw-for-tests-123"))
    return client


def _error(response) -> tuple[int, str, dict]:
    error = response.json()["error"]
    return response.status_code, error["message"], error["details"]


@pytest.mark.parametrize("body, message, details", [
    ({"value": "a", "expr": "b"}, "Give a fixed value or an expr, not both.", {"expr": "not with value"}),
    ({"value": "x" * 20_001}, "value is longer than 20000 characters.", {"value": "too long"}),
    ({"expr": "{% load static %}"}, None, None),
])
def test_the_api_refuses_a_bad_block_as_the_service_did(api_client, thread, body, message, details):
    status, said, where = _error(api_client.put(f"/api/v1/threads/{thread.pk}/blocks/b/", body,
                                                format="json"))
    assert status == 400 and not ContextBlock.objects.exists()
    if message is None:
        assert said.startswith("The expression does not compile") and where.keys() == {"expr"}
    else:
        assert (said, where) == (message, details)


def test_the_admin_refuses_a_block_name_with_a_slash(admin_client, thread):
    response = admin_client.post("/admin/contextstore/contextblock/add/", {
        "thread": thread.pk, "name": "team/plan", "value": "v", "expr": "", "placement": "suffix",
        "order": 0})
    assert response.status_code == 200 and not ContextBlock.objects.exists()
    assert "cannot contain &quot;/&quot;" in response.content.decode()


@pytest.mark.parametrize("block, message", [
    ({"name": "a/b", "value": "v"}, "name 'a/b': a block name is one URL path segment, "
                                    'so it cannot contain "/".'),
    ({"name": "x", "value": "a", "expr": "b"}, "Give a fixed value or an expr, not both."),
    ("not an object", "Each block must be an object."),
])
def test_an_import_refuses_a_bad_block_before_writing_anything(api_client, block, message):
    export = {"format": "contextstore", "thread": {}, "events": [], "blocks": [block]}
    status, said, _ = _error(api_client.post("/api/v1/threads/import/?session_key=copy", export,
                                             format="json"))
    assert (status, said) == (400, message)
    assert not Session.objects.filter(key="copy").exists()


def test_scores_are_refused_alike_by_the_api_and_the_dashboard(api_client, editor_client, session):
    status, said, where = _error(api_client.post(
        f"/api/v1/sessions/{session.pk}/scores/",
        {"name": "q", "data_type": "boolean", "value": "yes"}, format="json"))
    assert (status, said, where) == (400, "A boolean score's value must be true or false.",
                                     {"value": "true or false"})
    response = editor_client.post(f"/sessions/{session.pk}/scores/",
                                  {"name": "q", "data_type": "boolean", "value": "yes"}, **HTMX)
    assert response.status_code == 400
    assert escape("A boolean score's value must be true or false.") in response.content.decode()
    assert not Score.objects.exists()


def test_a_blank_comment_is_refused_on_adding_and_on_editing(editor_client, editor, session):
    response = editor_client.post(f"/sessions/{session.pk}/comments/", {"text": "   "}, **HTMX)
    assert response.status_code == 400 and "The comment is empty." in response.content.decode()
    assert not Comment.objects.exists()
    comment = comment_add(session=session, text="first", actor=Actor.for_user(editor))
    response = editor_client.post(f"/comments/{comment.pk}/edit/", {"text": " \n "}, **HTMX)
    assert response.status_code == 400 and "The comment is empty." in response.content.decode()
    comment.refresh_from_db()
    assert comment.text == "first"


def test_a_blank_memory_and_a_long_provider_name_are_400s(api_client, thread):
    status, said, where = _error(api_client.post("/api/v1/memories/", {"content": "  "}, format="json"))
    assert (status, said, where) == (400, "content is required.", {"content": "required"})
    assert not Memory.objects.exists()
    response = api_client.put(f"/api/v1/threads/{thread.pk}/providers/{'p' * 201}/", {"state": {}},
                              format="json")
    assert _error(response)[:2] == (400, "provider name is required (at most 200 characters).")
    assert not ProviderState.objects.exists()


def test_the_share_form_refuses_an_unknown_target_naming_it(editor_client, session):
    editor_client.post(f"/sessions/{session.pk}/shares/", {"kind": "everything", "expires": "1d"})
    page = editor_client.get(f"/sessions/{session.pk}/").content.decode()
    assert escape("Unknown target 'everything'; share a session, an event or a call.") in page
    assert not ShareLink.objects.exists()


@pytest.mark.parametrize("form, message", [
    ({"dataset": "  ", "start_position": "1", "end_position": "2"}, "Name the dataset."),
    ({"dataset": "evals", "start_position": "3", "end_position": "2"},
     "Choose a range: the first position, then a later or equal one."),
])
def test_a_range_added_to_a_dataset_is_refused_at_the_form(editor_client, thread, actor, form, message):
    event_append(thread=thread, actor=actor, events=messages(3))
    response = editor_client.post(f"/threads/{thread.pk}/dataset/", form, **HTMX)
    assert response.status_code == 400 and escape(message) in response.content.decode()
    assert not Dataset.objects.exists()


# An LLM call's data (eventspec): every door that takes events refuses it alike.
HASHES = "data.message_hashes must be a list of at most 2000 sha256 hex digests."
CALL_DATA = [
    ({"messages": "hi"}, "data.messages must be a list of at most 2000 messages."),
    ({"params": [1]}, "data.params must be an object of at most 10000 characters as JSON."),
    ({"params": {"x": "y" * 10_001}}, "data.params must be an object of at most 10000 characters as JSON."),
    ({"tools": {"name": "ls"}}, "data.tools must be a list of at most 500 tool definitions (objects)."),
    ({"tools": ["ls"]}, "data.tools must be a list of at most 500 tool definitions (objects)."),
    ({"message_hashes": ["f" * 63]}, HASHES),
    ({"message_hashes": "f" * 64}, HASHES),
    ({"tools_hash": "F" * 64}, "data.tools_hash must be a sha256 hex digest."),
]


def _call(data: dict) -> dict:
    return {"type": "LLMCallStart", "data": {"model": "m", **data}}


@pytest.mark.parametrize(("data", "message"), CALL_DATA)
def test_every_door_that_takes_events_refuses_a_call_of_a_bad_shape(api_client, thread, data, message):
    from contextstore.models import Event

    doors = [
        (f"/api/v1/threads/{thread.pk}/events/", {"events": [_call(data)]}, "events[0]"),
        ("/api/v1/agent-sessions/commit/", {"app": "a", "key": "k", "create": True,
                                            "events": [_call(data)]}, "events[0]"),
        (f"/api/v1/threads/{thread.pk}/sync/", {"namespace": "fw", "items": [
            {"key": "c", "event": _call(data)}]}, "items[0].event"),
        ("/api/v1/threads/import/?session_key=copy", {"format": "contextstore", "thread": {},
                                                       "events": [{**_call(data), "seq": 1}]},
         "events[0]"),
    ]
    for url, body, place in doors:
        status, said, where = _error(api_client.post(url, body, format="json"))
        assert (status, said) == (400, f"{place}.{message}"), url
        assert where == {f"{place}.{message.split(' must')[0]}": "invalid"}
    assert not Event.objects.exists() and not Session.objects.filter(key__in=["k", "copy"]).exists()


@pytest.mark.parametrize(("body", "message"), [
    ({"start_position": 3, "end_position": 2, "summary_text": "s"},
     "start_position must not be after end_position."),
    ({"start_position": 1, "end_position": 2, "summary_text": " \n "}, "summary_text is required."),
    ({"start_position": 1, "end_position": 2, "summary_text": "é" * 60},
     "summary_text is larger than 100 bytes."),
])
def test_the_api_refuses_a_collapse_out_of_shape(api_client, thread, actor, settings, body, message):
    from contextstore.models import Collapse

    event_append(thread=thread, events=messages(4), actor=actor)
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "MAX_EVENT_CONTENT_BYTES": 100}
    status, said, _ = _error(api_client.post(f"/api/v1/threads/{thread.pk}/collapse/", body,
                                             format="json"))
    assert (status, said) == (413 if "larger" in message else 400, message)
    assert not Collapse.objects.exists()


@pytest.mark.parametrize(("summary", "message"), [
    (" \n ", "This field is required."), ("é" * 60, "summary_text is larger than 100 bytes.")])
def test_the_dashboard_refuses_a_collapse_out_of_shape(editor_client, thread, actor, settings,
                                                       summary, message):
    from contextstore.models import Collapse

    event_append(thread=thread, events=messages(4), actor=actor)
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "MAX_EVENT_CONTENT_BYTES": 100}
    response = editor_client.post(f"/threads/{thread.pk}/collapse/",
                                  {"start_position": 1, "end_position": 2, "summary": summary}, **HTMX)
    assert response.status_code == 400 and escape(message) in response.content.decode()
    assert not Collapse.objects.exists()


@pytest.mark.parametrize("timestamp", ["yesterday", "2026-13-01T00:00:00", 5])
def test_the_api_refuses_an_input_whose_timestamp_is_no_date_time(api_client, thread, timestamp):
    status, said, where = _error(api_client.post(f"/api/v1/threads/{thread.pk}/input/",
                                                 {"input": "go", "timestamp": timestamp}, format="json"))
    assert (status, said) == (400, "timestamp must be an ISO 8601 date-time.")
    assert where == {"timestamp": str(timestamp)}
    thread.refresh_from_db()
    assert (thread.revision, thread.current_input) == (0, None)


def test_an_input_keeps_the_agents_timestamp_with_its_offset(api_client, thread):
    url = f"/api/v1/threads/{thread.pk}/"
    api_client.post(f"{url}input/", {"input": "first"}, format="json")
    api_client.post(f"{url}results/", {"step": "s", "result": 1}, format="json")
    api_client.post(f"{url}input/", {"input": "next", "timestamp": "2026-01-02T03:04:05+02:00"},
                    format="json")
    thread.refresh_from_db()
    assert thread.conversation_history[0]["timestamp"] == "2026-01-02T03:04:05+02:00"


@pytest.mark.parametrize(("names", "query", "message"), [
    ({"key": "a\x00b"}, "", "key: names and ids cannot hold NUL characters (U+0000)."),
    ({"key": 7}, "", "key must be a string."),
    ({"key": "k" * 256}, "", "key is longer than 255 characters."),
    ({"key": "k", "user_id": "u\x00"}, "", "user_id: names and ids cannot hold NUL characters (U+0000)."),
    ({"key": "k", "agent": ["a"]}, "", "agent must be a string."),
    ({"key": "k", "title": "t" * 501}, "", "title is longer than 500 characters."),
    ({"key": "k", "user_id": "u\x00"}, "?session_key=copy", "user_id: names and ids cannot hold NUL "
                                                            "characters (U+0000)."),
])
def test_an_import_refuses_session_names_a_session_cannot_hold(api_client, names, query, message):
    # importspec (sessionspec's rules): before anything is written
    export = {"format": "contextstore", "session": names, "thread": {}, "events": []}
    status, said, _ = _error(api_client.post(f"/api/v1/threads/import/{query}", export, format="json"))
    assert (status, said) == (400, message)
    assert not Session.objects.exists()


def test_an_import_takes_the_requests_key_over_the_exports_bad_one(api_client):
    export = {"format": "contextstore", "session": {"key": "a\x00b"}, "thread": {}, "events": []}
    response = api_client.post("/api/v1/threads/import/?session_key=copy", export, format="json")
    assert response.status_code == 201
    assert list(Session.objects.values_list("key", flat=True)) == ["copy"]
