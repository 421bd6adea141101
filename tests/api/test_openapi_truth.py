"""What the schema fuzzer found (issue 27) that a schema could not fix: the server's own
answers. The schema's side is tests/test_schemathesis.py."""

import json
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from contextstore.models import Session
from contextstore.services import agent_sessions, sessions
from contextstore.services import threads as thread_service
from contextstore.services.common import Actor

URL = "/api/v1/agent-sessions/"
WHO = {"app": "shop", "user_id": "ann", "key": "s1"}


@pytest.fixture
def agent_session(api_client):
    answer = api_client.post(URL + "commit/", {**WHO, "create": True, "events": [
        {"type": "Message", "role": "user", "content": "hi"}]}, format="json")
    assert answer.status_code == 200, answer.json()
    return Session.objects.get(key="s1")


@pytest.mark.parametrize("route", ["", "read/", "clear/", "commit/", "scopes/", "blobs/", "delete/"])
def test_an_http_delete_on_an_agent_sessions_route_deletes_nothing(api_client, agent_session, route):
    answer = api_client.delete(URL + route, WHO, format="json")
    assert answer.status_code == 405 and answer.json()["error"]["code"] == "method_not_allowed"
    assert Session.objects.filter(pk=agent_session.pk).exists()


def _deleted_before_the_lock(monkeypatch, module, name, session):
    """The session goes (another request's delete) after the service found its thread and
    before it takes the thread's lock."""
    original = getattr(module, name)

    def meanwhile(*args, **kwargs):
        sessions.session_delete(session=Session.objects.get(pk=session.pk), actor=Actor.system("other"))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, meanwhile)


def test_clearing_a_session_deleted_meanwhile_answers_as_a_missing_one(api_client, agent_session,
                                                                       monkeypatch):
    _deleted_before_the_lock(monkeypatch, thread_service, "thread_clear_context", agent_session)
    answer = api_client.post(URL + "clear/", WHO, format="json")
    assert answer.status_code == 200 and answer.json() == {"cleared": 0}


def test_retracting_from_a_session_deleted_meanwhile_answers_as_a_missing_one(
        api_client, agent_session, monkeypatch):
    _deleted_before_the_lock(monkeypatch, agent_sessions, "lock_thread", agent_session)
    answer = api_client.post(URL + "retract/", WHO, format="json")
    assert answer.status_code == 200 and answer.json() == {"event": None}


def test_committing_to_a_session_deleted_meanwhile_answers_as_a_missing_one(
        api_client, agent_session, monkeypatch):
    """A commit finds and locks an existing thread in one read, so it sees the session whole or
    gone. The window left: the read finds none (another request is making it), `_ensure` then
    finds it, and it is deleted before the lock."""
    monkeypatch.setattr(agent_sessions, "_LOCKED_THREAD", SimpleNamespace(get=lambda *args: None))
    _deleted_before_the_lock(monkeypatch, agent_sessions, "lock_thread", agent_session)
    answer = api_client.post(URL + "commit/", {**WHO, "events": [{"type": "Message"}]}, format="json")
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"


def test_a_cursor_the_api_did_not_give_out_names_no_page(api_client, agent_session):
    for cursor in ("0", "cheight", f"2026-01-01T00:00:00+00:00|{2**63}"):
        answer = api_client.get(URL, {"app": "shop", "cursor": cursor})
        assert answer.status_code == 404, (cursor, answer.json())
        assert answer.json()["error"]["details"] == {"cursor": cursor}


def test_blobs_answer_the_list_the_schema_describes(api_client, agent_session):
    blob = {"key": "k", "data": "aGk=", "content_type": "text/plain"}
    assert api_client.post(URL + "commit/", {**WHO, "blobs": [blob]}, format="json").status_code == 200
    answer = api_client.get(URL + "blobs/", {**WHO, "blob": "k"}).json()
    assert [b["key"] for b in answer] == ["k"]
    schema = json.loads(api_client.get("/api/schema/", HTTP_ACCEPT="application/json").content)
    ok = schema["paths"][URL + "blobs/"]["get"]["responses"]["200"]["content"]["application/json"]
    assert ok["schema"]["type"] == "array"


def test_the_document_is_valid_openapi_3_0(tmp_path):
    """Generated clients read it: drf-spectacular's validator (the OpenAPI 3.0 meta-schema)
    finds nothing and it warns of nothing (a `patternProperties`, JSON Schema's but not 3.0's,
    once slipped in)."""
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    assert "openapi: 3.0" in (tmp_path / "schema.yaml").read_text()


@pytest.mark.parametrize("document", [
    {"messages": [{"id": {}, "role": "user", "content": "hi"}]},
    {"messages": [{"id": "m1", "content": "hi"}], "system_prompt_message_id": ["m1"]},
])
def test_a_peteos_id_that_is_no_name_is_refused_not_a_server_error(api_client, document):
    answer = api_client.post("/api/v1/threads/import/", document, format="json")
    assert answer.status_code == 400, answer.content


@pytest.mark.parametrize("record", ["clears", "collapses"])
def test_an_event_of_an_import_naming_no_record_belongs_to_none(api_client, record):
    """A clear (or collapse) without an id is no record an event without one refers to."""
    events = [{"seq": 1, "type": "Summary", "content": "s"}]
    item = {"actor": "a"} if record == "clears" else {
        "start_position": 1, "end_position": 1, "summary_seq": 1}
    answer = api_client.post("/api/v1/threads/import/", {
        "format": "contextstore", "events": events, record: [item]}, format="json")
    assert answer.status_code == 201, answer.content
    thread = answer.json()["id"]
    event = api_client.get(f"/api/v1/threads/{thread}/events/?status=all").json()["results"][0]
    assert event["collapse"] is None


@pytest.mark.parametrize("namespace", ["fw", "Überfluß.1", "框架_2", "a-b.c_d", "x" * 64,
                                       "", "a b", "a/b", "x" * 65, "ns\u00ad", "١٢٣"])
def test_the_namespace_pattern_is_the_doors_rule(namespace):
    """The schema's namespace pattern (ECMA 262, Unicode) holds exactly what syncspec takes."""
    import jsonschema_rs

    from contextstore.api.sync import NAMESPACE_PATTERN
    from contextstore.errors import InvalidInput
    from contextstore.syncspec import check_namespace

    try:
        check_namespace(namespace)
        taken = True
    except InvalidInput:
        taken = False
    schema = {"type": "string", "pattern": NAMESPACE_PATTERN}
    assert jsonschema_rs.validator_for(schema).is_valid(namespace) == taken


@pytest.mark.parametrize("key", ["a", "Größe", "键_1", "a-b_c", "", "a__b", "a b", "a.b", "__"])
def test_the_data_contains_key_pattern_is_the_selectors_rule(key):
    import jsonschema_rs

    from contextstore.api.schema import DATA_CONTAINS
    from contextstore.errors import InvalidInput
    from contextstore.selectors.agent_sessions import data_contains_q

    try:
        data_contains_q({key: 1})
        taken = True
    except InvalidInput:
        taken = False
    schema = {"type": "string", "pattern": DATA_CONTAINS["x-key-pattern"]}
    assert jsonschema_rs.validator_for(schema).is_valid(key) == taken


def test_a_sync_save_takes_keys_and_upload_ids_verbatim(api_client, thread):
    """Whitespace is a key's own (the service keeps it): the view's shape check must not trim
    a key of whitespace alone to a blank one and refuse it."""
    answer = api_client.post(f"/api/v1/threads/{thread.pk}/sync/", {
        "namespace": "fw", "removed": ["\x1d", " k "], "upload_id": " "}, format="json")
    assert answer.status_code == 200, answer.json()
