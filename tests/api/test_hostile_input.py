"""A hand corpus of hostile bodies, headers, paths and query strings (issue 11), run on both
databases: never a 5xx, every refusal in the JSON error shape naming the place, nothing written
by a refused request, and the thread still reads afterwards."""

import base64
import json
from typing import Any
from urllib.parse import quote

import pytest
from django.apps import apps

from contextstore.models import Event
from contextstore.services.events import event_append
from tests.conftest import messages, response_json

DEEP = "[" * 10_000 + "]" * 10_000


def deep_object(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


# (name, method, path under the thread's URL or absolute, body: str|dict|None, headers, query,
#  the status expected, a key `details` must name)
CORPUS: list[tuple[str, str, str, Any, dict, str, int, str]] = [
    ("occurred_at past year 9999 in UTC", "post", "events/",
     {"events": [{"type": "Message", "occurred_at": "9999-12-31T23:59:59-12:00"}]}, {}, "", 400,
     "events[0].occurred_at"),
    ("occurred_at before year 1 in UTC", "post", "events/",
     {"events": [{"type": "Message", "occurred_at": "0001-01-01T00:00:00+01:00"}]}, {}, "", 400,
     "events[0].occurred_at"),
    ("occurred_at month 13", "post", "events/",
     {"events": [{"type": "Message", "occurred_at": "2024-13-01T00:00:00Z"}]}, {}, "", 400,
     "events[0].occurred_at"),
    ("occurred_at February 30", "post", "events/",
     {"events": [{"type": "Message", "occurred_at": "2024-02-30T10:00:00"}]}, {}, "", 400,
     "events[0].occurred_at"),
    ("occurred_at offset of 25 hours", "post", "events/",
     {"events": [{"type": "Message", "occurred_at": "2024-01-01T00:00:00+25:00"}]}, {}, "", 400,
     "events[0].occurred_at"),
    ("events body nested 10,000 deep", "post", "events/", DEEP, {}, "", 400, "body"),
    ("event data nested 65 deep", "post", "events/",
     '{"events": [{"type": "Message", "data": ' + deep_object(62) + "}]}", {}, "", 400, "body"),
    ("session body nested 10,000 deep", "post", "/api/v1/sessions/", DEEP, {}, "", 400, "body"),
    ("import body nested 10,000 deep", "post", "/api/v1/threads/import/", DEEP, {}, "", 400, "body"),
    ("state PUT nested 10,000 deep", "put", "state/", '{"state": ' + DEEP + "}", {}, "", 400, "body"),
    ("merge patch nested 1,000 deep", "patch", "state/", '{"state": ' + deep_object(1000) + "}",
     {"CONTENT_TYPE": "application/merge-patch+json"}, "", 400, "body"),
    ("lone surrogate in event content", "post", "events/",
     '{"events": [{"type": "Message", "content": "a\\ud800b"}]}', {}, "", 400,
     "events[0].content"),
    ("lone low surrogate in state", "put", "state/", '{"state": {"note": "\\udfff"}}', {}, "", 400,
     "state.note"),
    ("lone surrogate in a state key", "put", "state/", '{"state": {"\\ud800": 1}}', {}, "", 400,
     "state.\\ud800"),
    ("NUL in an event's call id", "post", "events/",
     '{"events": [{"type": "Message", "call_id": "a\\u0000b"}]}', {}, "", 400, "events[0].call_id"),
    ("NaN in event data", "post", "events/",
     '{"events": [{"type": "Message", "data": {"k": NaN}}]}', {}, "", 400, "events[0].data.k"),
    ("Infinity in state", "put", "state/", '{"state": {"k": [Infinity]}}', {}, "", 400, "state.k[0]"),
    ("NUL in a session key", "post", "/api/v1/sessions/", '{"key": "s\\u0000"}', {}, "", 400, "key"),
    ("NUL in a block name (path)", "put", "blocks/a%00b/", {"value": "x"}, {}, "", 400, "path"),
    ("a slash in a block name (path, percent-encoded)", "put", "blocks/a%2Fb/", {"value": "x"}, {}, "",
     400, "name"),
    ("NUL in a query string", "get", "events/", None, {}, "q=a%00b", 400, "q"),
    ("NUL in a memory search", "get", "/api/v1/memories/", None, {}, "q=%00", 400, "q"),
    ("limit of 10^30", "get", "events/", None, {}, "limit=1000000000000000000000000000000", 400,
     "limit"),
    ("after_seq of 10^30", "get", "events/", None, {}, "after_seq=1000000000000000000000000000000",
     400, "after_seq"),
    ("negative page_size", "get", "events/", None, {}, "page_size=-1", 400, "page_size"),
    ("history n of 10^30", "get", "history/", None, {}, "n=1000000000000000000000000000000", 400, "n"),
    ("window count of 10^30", "get", "window/", None, {}, "count=1000000000000000000000000000000",
     400, "count"),
    ("If-Match with a superscript digit", "put", "state/", {"state": {}},
     {"HTTP_IF_MATCH": '"²"'}, "", 400, "If-Match"),
    ("If-Match with Arabic-Indic digits", "put", "state/", {"state": {}},
     {"HTTP_IF_MATCH": "٣"}, "", 400, "If-Match"),
    ("If-Match with a list", "put", "state/", {"state": {}}, {"HTTP_IF_MATCH": '"1", "2"'}, "", 400,
     "If-Match"),
    ("If-Match with 40 digits", "put", "state/", {"state": {}}, {"HTTP_IF_MATCH": "9" * 40}, "", 400,
     "If-Match"),
    ("If-Match half quoted", "put", "state/", {"state": {}}, {"HTTP_IF_MATCH": '"1'}, "", 400,
     "If-Match"),
    ("fork from 10^30", "post", "fork/", {"name": "f", "start_position": 10**30}, {}, "", 400,
     "start_position"),
    ("fork to a negative position", "post", "fork/", {"name": "f", "end_position": -5}, {}, "", 400,
     "end_position"),
    ("fork past the end of the thread", "post", "fork/", {"name": "f", "start_position": 50,
                                                              "end_position": 60},
     {}, "", 400, "start_position"),
    ("fork with start after end", "post", "fork/", {"name": "f", "start_position": 3, "end_position": 2},
     {}, "", 400, "start_position"),
    ("collapse to 10^30", "post", "collapse/",
     {"start_position": 1, "end_position": 10**30, "summary_text": "s"}, {}, "", 400, "end_position"),
    ("type with a trailing newline", "post", "events/", {"events": [{"type": "Message\n"}]}, {}, "",
     400, "events[0].type"),
    ("type with a space", "post", "events/", {"events": [{"type": "My Event"}]}, {}, "", 400,
     "events[0].type"),
    ("type with a control character", "post", "events/", {"events": [{"type": "A\u0007"}]}, {}, "",
     400, "events[0].type"),
    ("type of 65 characters", "post", "events/", {"events": [{"type": "T" * 65}]}, {}, "", 400,
     "events[0].type"),
    ("empty type", "post", "events/", {"events": [{"type": ""}]}, {}, "", 400, "events[0].type"),
    ("duplicate key in a body", "post", "events/",
     '{"events": [{"type": "Message"}], "events": [{"type": "Error"}]}', {}, "", 400, "events"),
    ("duplicate key in state", "put", "state/", '{"state": {"plan": 1, "plan": 2}}', {}, "", 400,
     "state.plan"),
    ("duplicate key in a merge patch", "patch", "state/", '{"state": {"a": {"b": 1, "b": 2}}}',
     {"CONTENT_TYPE": "application/merge-patch+json"}, "", 400, "state.a.b"),
    ("not JSON at all", "post", "events/", "{'events': }", {}, "", 400, "body"),
    ("invalid UTF-8", "post", "events/", b'{"events": [{"type": "Message", "content": "\xff"}]}', {},
     "", 400, "body"),
    ("cursor whose position is not an id", "get", "/api/v1/sessions/", None, {},
     "cursor=" + base64.b64encode(b"p=abc").decode(), 404, ""),
    ("cursor whose position is huge", "get", "state/revisions/", None, {},
     "cursor=" + base64.b64encode(b"p=" + b"9" * 40).decode(), 404, ""),
    ("huge thread id", "get", "/api/v1/threads/99999999999999999999999999/", None, {}, "", 404, ""),
    ("huge revision to restore", "post", "state/revisions/99999999999999999999999999/restore/", None,
     {}, "", 404, ""),
]

READS = ("events/", "context/", "export/", "window/?count=10", "state/", "history/", "")


def counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in apps.get_app_config("contextstore").get_models()}


@pytest.fixture
def filled(thread, actor):
    event_append(thread=thread, events=messages(3, words=8), actor=actor)
    return thread


@pytest.mark.parametrize("case", CORPUS, ids=[c[0] for c in CORPUS])
def test_hostile_input_is_refused_cleanly_and_changes_nothing(case, api_client, filled):
    name, method, path, body, headers, query, status, field = case
    url = path if path.startswith("/") else f"/api/v1/threads/{filled.pk}/{path}"
    if query:
        url += "?" + query
    if isinstance(body, dict):
        data, content_type = json.dumps(body), "application/json"
    else:
        data, content_type = body, "application/json"
    headers = dict(headers)
    content_type = headers.pop("CONTENT_TYPE", content_type)
    before = counts()
    kwargs = {"data": data, "content_type": content_type} if data is not None else {}
    response = getattr(api_client, method)(url, **kwargs, **headers)
    assert response.status_code == status, response.content[:300]
    error = response.json()["error"]
    assert set(error) == {"code", "message", "details"}
    assert isinstance(error["message"], str) and error["message"]
    if field:
        assert field in error["details"], error
    assert counts() == before
    for read in READS:
        assert api_client.get(f"/api/v1/threads/{filled.pk}/{read}").status_code == 200, read


def test_accepted_edge_values_are_stored_and_read_back_exactly(api_client, filled):
    """What the rules let through round-trips on both databases."""
    url = f"/api/v1/threads/{filled.pk}/events/"
    events = [
        {"type": "langgraph:checkpoint/v2", "content": "ok", "client_id": "a"},
        {"type": "T" * 64, "content": "😀 \u2028 é", "client_id": "b"},
        {"type": "Message", "occurred_at": "9999-12-31T23:59:59.999999Z", "client_id": "c"},
        {"type": "Message", "occurred_at": "0001-01-01T00:00:00Z", "client_id": "d"},
        {"type": "Message", "occurred_at": "9999-12-31T10:00:00-12:00", "client_id": "e"},
        {"type": "Message", "data": json.loads(deep_object(60)), "client_id": "f"},
    ]
    response = api_client.post(url, {"events": events}, format="json")
    assert response.status_code == 201, response.json()
    stored = api_client.get(url + "?after_seq=3").json()["results"]
    assert [e["type"] for e in stored] == [e["type"] for e in events]
    assert stored[1]["content"] == "😀 \u2028 é"
    assert [e["occurred_at"] for e in stored[2:5]] == [
        "9999-12-31T23:59:59.999999Z", "0001-01-01T00:00:00Z", "9999-12-31T22:00:00Z"]
    assert stored[5]["data"] == events[5]["data"]
    for read in READS:
        assert api_client.get(f"/api/v1/threads/{filled.pk}/{read}").status_code == 200, read
    state = api_client.put(f"/api/v1/threads/{filled.pk}/state/", {"state": {"n": 1}},
                           format="json", HTTP_IF_MATCH='W/"0"')
    assert state.status_code == 200, state.json()
    assert api_client.put(f"/api/v1/threads/{filled.pk}/state/", {"state": {"n": 2}},
                          format="json", HTTP_IF_MATCH="1").status_code == 200
    assert Event.objects.filter(thread=filled).count() == 9


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59-12:00", "2024-13-01T00:00:00Z"])
def test_an_import_with_an_unstorable_date_time_is_refused(api_client, filled, actor, stamp):
    from contextstore.services.collapses import collapse_create

    collapse_create(thread=filled, start_position=1, end_position=2, summary_text="s", actor=actor)
    export = response_json(api_client.get(f"/api/v1/threads/{filled.pk}/export/"))
    export["collapses"][0]["undone_at"] = stamp
    before = counts()
    response = api_client.post("/api/v1/threads/import/?name=copy", export, format="json")
    assert response.status_code == 400, response.json()
    assert "undone_at" in json.dumps(response.json()["error"]["details"])
    assert counts() == before


@pytest.mark.parametrize("name", ["\n", " \t", "a\x00b"])
def test_an_import_names_its_thread_with_text(api_client, name):
    response = api_client.post("/api/v1/threads/import/", {"messages": []}, format="json",
                               QUERY_STRING=f"name={quote(name)}")
    assert response.status_code == 400, response.content
    assert "name" in response.json()["error"]["details"]
