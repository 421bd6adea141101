"""The one-request session read as the adapters make it (ADK get_session, the Agents SDK's
get_items with and without a limit): its statements, its newest-N window, and its bytes, which
equal the events printed from the ORM's own rows on any value an agent can store."""

import pytest

from contextstore.api.renderers import ORJSONRenderer
from contextstore.api.serializers import EVENT_ROW_VALUES
from contextstore.models import Event
from contextstore.selectors import agent_sessions
from contextstore.selectors.agent_sessions import EVENT_ROW_TEXT

URL = "/api/v1/agent-sessions/"
WHO = {"app": "shop", "user_id": "ann", "key": "s1"}
ADK_FIELDS = "client_id,run_id,content,data"
ADK_TYPES = ["Message", "LLMOutput", "ToolCall", "ToolResult", "Reasoning", "AgentEvent"]

EDGE_TEXTS = ["", "plain", "ü é 中文 🙂", "quote \" backslash \\ slash /", "\x00", "a\x00b\x00",
              "\u2400", "\u241b", "\u241b\u2400", "\u241b\u241b\x00", "\u2028 and \u2029",
              "".join(chr(i) for i in range(1, 32)) + "\x7f", "\U0010ffff\ue000\ud7ff"]
EDGE_DATA = [None, {}, [], 0, "", {"item": {"b": 1, "a": 2}, "z": None},
             {"big": 2**70, "neg": -(2**63), "float": 1.5e300, "small": 5e-324, "zero": -0.0},
             {"nul": "\x00", "symbols": "\u2400\u241b", "line": "\u2028", "deep": [[[[{"x": [{}]}]]]]},
             {"keys in order": 1, "": 2, "ü": 3, "\x00": 4}]


def commit(client, **payload):
    return client.post(URL + "commit/", {**WHO, **payload}, format="json")


def read(client, **params):
    return client.get(URL + "read/", {**WHO, **params})


def edge_events() -> list[dict]:
    events = []
    for i, text in enumerate(EDGE_TEXTS):
        events.append({"type": "Message" if i % 2 else "LLMOutput", "role": "user", "content": text,
                       "client_id": f"c{i}", "run_id": f"r{i % 3}" if i % 4 else None,
                       "call_id": "call" if i % 5 == 0 else "", "visible": i % 3 != 0,
                       "data": EDGE_DATA[i % len(EDGE_DATA)],
                       "parts": [{"type": "text", "text": text}] if i % 2 else None,
                       "occurred_at": f"2026-01-02T03:04:{i:02d}{'.000123' if i % 2 else ''}Z"})
    events.append({"type": "FunctionResponse", "content": "not ADK's own", "client_id": "part"})
    return events


def events_part(body: bytes) -> bytes:
    """The answer's events array, as bytes (blobs is the answer's last field)."""
    start = body.index(b'"events":') + len(b'"events":')
    return body[start:body.rindex(b',"blobs":')]


def by_the_orm(fields: list[str], **filters) -> bytes:
    """The history's events as the ORM's values() rows give them (its converters, the content
    unescaped), printed field by field and rendered: the read's way before its rows came from
    the cursor."""
    columns = [EVENT_ROW_VALUES[name][0] for name in fields]
    rows = (Event.objects.filter(status=Event.Status.ACTIVE, **filters).annotate(**EVENT_ROW_TEXT)
            .order_by("seq").values(*columns))
    printed = [{name: (make(row[column]) if make else row[column])
                for name, (column, make) in ((n, EVENT_ROW_VALUES[n]) for n in fields)} for row in rows]
    return ORJSONRenderer().render(printed)


@pytest.mark.parametrize("params", [
    {},  # every field
    {"fields": ADK_FIELDS, "type": ADK_TYPES},  # ADK's get_session
    {"fields": "content,data"},  # the Agents SDK's get_items
    {"fields": "data,occurred_at,visible,collapse,run_id,content,created_at,parts"},
])
def test_a_reads_bytes_equal_the_orms_rows_on_edge_values(api_client, params):
    assert commit(api_client, create=True, events=edge_events()).status_code == 200
    answer = read(api_client, **params)
    assert answer.status_code == 200, answer.json()
    fields = params["fields"].split(",") if "fields" in params else list(EVENT_ROW_VALUES)
    filters = {"type__in": params["type"]} if "type" in params else {}
    assert events_part(answer.content) == by_the_orm(fields, **filters)
    events = answer.json()["events"]
    assert len(events) == len(EDGE_TEXTS) + (0 if filters else 1)
    assert [e["content"] for e in events][:len(EDGE_TEXTS)] == EDGE_TEXTS
    assert events[6]["data"] == EDGE_DATA[6] and list(events[5]["data"]["item"]) == ["b", "a"]


def test_an_empty_sessions_read_has_no_events(api_client, django_assert_num_queries):
    assert api_client.post(URL, {**WHO, "state": {"a": 1}}, format="json").status_code == 201
    with django_assert_num_queries(2):
        answer = read(api_client, fields="content,data", limit=20)
    assert answer.json()["events"] == [] and events_part(answer.content) == b"[]"
    assert answer.json()["state"] == {"a": 1}


@pytest.mark.parametrize("params", [
    {"fields": ADK_FIELDS, "type": ADK_TYPES},  # ADK's get_session
    {"fields": ADK_FIELDS, "type": ADK_TYPES, "limit": 5},  # with num_recent_events
    {"fields": "content,data"},  # the Agents SDK's get_items()
    {"fields": "content,data", "limit": 20},  # get_items(limit=20)
    {},
])
def test_a_read_is_two_statements_whatever_the_history(api_client, django_assert_num_queries, params):
    """The thread and its session with the app's and user's scoped states, then the events; no
    more for a longer history or a limit."""
    for size in (3, 40):
        events = [{"type": "Message", "content": f"m{i}", "data": {"i": i}} for i in range(size)]
        assert commit(api_client, create=True, events=events).status_code == 200
        with django_assert_num_queries(2):
            answer = read(api_client, **params)
        assert answer.status_code == 200


def test_the_scoped_states_come_with_the_thread(api_client):
    assert api_client.post(URL, {**WHO, "state": {"s": 1}, "app_state": {"theme": "dark"},
                                 "user_state": {"lang": "fi"}}, format="json").status_code == 201
    # another user's scope and another app's are not these
    assert api_client.post(URL, {**WHO, "user_id": "bob", "user_state": {"lang": "sv"}},
                           format="json").status_code == 201
    assert api_client.post(URL, {**WHO, "app": "other", "app_state": {"theme": "light"}},
                           format="json").status_code == 201
    assert commit(api_client, app_state={"x": 1}).status_code == 200
    body = read(api_client).json()
    assert (body["app_state"], body["app_revision"]) == ({"theme": "dark", "x": 1}, 2)
    assert (body["user_state"], body["user_revision"]) == ({"lang": "fi"}, 1)
    nobody = read(api_client, user_id="carl")
    assert nobody.status_code == 404
    assert api_client.post(URL, {**WHO, "user_id": "carl"}, format="json").status_code == 201
    carl = read(api_client, user_id="carl").json()
    assert (carl["app_state"], carl["user_state"]) == ({"theme": "dark", "x": 1}, {})
    assert carl["user_revision"] == 0


def test_another_workspace_reads_nothing(api_client, other_client):
    assert commit(api_client, create=True, events=[{"type": "Message", "content": "mine"}],
                  app_state={"secret": 1}).status_code == 200
    for params in ({}, {"limit": 1}, {"fields": "content,data"}):
        answer = read(other_client, **params)
        assert answer.status_code == 404 and "mine" not in answer.content.decode()


def test_the_newest_n_skip_what_left_the_history(api_client, django_assert_num_queries):
    """The newest N are looked for among the last N seqs first; retracted and cleared events
    there are made up for from below, in one more statement."""
    events = [{"type": "Message", "content": f"m{i}"} for i in range(30)]
    assert commit(api_client, create=True, events=events).status_code == 200
    with django_assert_num_queries(2):
        assert [e["content"] for e in read(api_client, fields="content", limit=5).json()["events"]] == [
            f"m{i}" for i in range(25, 30)]
    for _ in range(2):
        assert api_client.post(URL + "retract/", WHO, format="json").status_code == 200
    with django_assert_num_queries(3):
        newest = read(api_client, fields="content", limit=5).json()["events"]
    assert [e["content"] for e in newest] == [f"m{i}" for i in range(23, 28)]
    assert [e["content"] for e in read(api_client, fields="content", limit=40).json()["events"]] == [
        f"m{i}" for i in range(28)]
    assert read(api_client, fields="content", limit=0).json()["events"] == []
    assert api_client.post(URL + "clear/", WHO, format="json").status_code == 200
    assert commit(api_client, events=[{"type": "Message", "content": "after"}]).status_code == 200
    assert [e["content"] for e in read(api_client, fields="content", limit=5).json()["events"]] == ["after"]


def test_a_filtered_newest_n_reads_below_the_window(api_client):
    events = [{"type": "Checkpoint" if i % 10 == 0 else "Message", "content": f"m{i}"} for i in range(30)]
    assert commit(api_client, create=True, events=events).status_code == 200
    got = read(api_client, fields="content", type="Checkpoint", limit=2).json()["events"]
    assert [e["content"] for e in got] == ["m10", "m20"]


def test_past_the_compiled_shapes_a_read_is_built_by_the_orm(api_client, monkeypatch):
    """Fields come in any order: the shapes compiled once are capped, the rest read the same."""
    assert commit(api_client, create=True, events=edge_events()).status_code == 200
    params = [{"fields": "content,data"}, {"fields": "data,content", "limit": 3},
              {"fields": ADK_FIELDS, "type": ADK_TYPES, "limit": 4}, {"limit": 2}]
    compiled = [read(api_client, **p).content for p in params]
    monkeypatch.setattr(agent_sessions, "_COMPILED", {})
    monkeypatch.setattr(agent_sessions, "MAX_COMPILED", 0)
    assert [read(api_client, **p).content for p in params] == compiled
    assert agent_sessions._COMPILED == {}


def test_bad_data_contains_is_refused_whatever_the_limit(api_client):
    assert commit(api_client, create=True, events=[{"type": "Message", "content": "x"}]).status_code == 200
    for limit in (0, 1):
        answer = read(api_client, data_contains='{"a__b": 1}', limit=limit)
        assert answer.status_code == 400 and "data_contains" in answer.json()["error"]["details"]
