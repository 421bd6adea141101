"""Any valid Unicode string an agent sends as content comes back byte-identical, U+0000
included, on both databases (issue "Fidelity v3", item 1): event content, parts and data, the
document (state, clientai fields, summary), blocks and their versions, memories, provider
states, runs, sync items, render records, agent sessions, export and import. Names and ids
(addressed in paths and query strings, which cannot carry NUL) still refuse it, and JSON that
is not JSON (NaN, Infinity) is refused naming where."""

import json

import pytest
from django.db import connection

from contextstore.models import ContextBlock, ContextBlockVersion, Event, Memory, Run, StoredText
from tests.conftest import response_json

# NUL, the characters the storage escape uses (U+2400 stands for NUL, U+241B escapes), a
# literal backslash-u escape and a line break: each must come back as it went in.
TEXT = "shell said: ok\x00\x00 then ␀ and ␛␀ done\x00 \\u0000 end\n\x00"
KEY = "k\x00␛"


def stored(model, pk: int, column: str) -> str:
    """The column as the database holds it (no field conversion)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM {model._meta.db_table} WHERE id = %s", [pk])
        return cursor.fetchone()[0]


def test_event_content_parts_and_data_round_trip(api_client, thread_url):
    event = {"type": "Message", "role": "tool", "content": TEXT,
             "parts": [{"type": "text", "text": TEXT}, TEXT], "data": {"out": TEXT, KEY: [TEXT]}}
    posted = api_client.post(f"{thread_url}events/", {"events": [event]}, format="json")
    assert posted.status_code == 201, posted.json()
    listed = api_client.get(f"{thread_url}events/")
    assert b"\\u0000" in listed.content
    got = listed.json()["results"][0]
    assert (got["content"], got["parts"], got["data"]) == (TEXT, event["parts"], event["data"])
    # The same storage form on both databases: no NUL in any column.
    for column in ("content", "parts", "data"):
        assert "\x00" not in stored(Event, got["id"], column)
    assert stored(Event, got["id"], "content").startswith("shell said: ok␀␀ then ␛␀ and ␛␛␛␀")


@pytest.mark.parametrize("query", [
    {"q": "shell said"}, {"q": "OK"}, {"q": "then"}, {"q": "done"}, {"q": " end"},
    {"q": "then ␀ and ␛␀ done"}, {"q": "␛"}, {"regex": "ok.*then"}, {"regex": "^shell"},
])
def test_a_search_finds_the_text_around_a_nul(api_client, thread_url, query):
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": TEXT}, {"type": "Message", "content": "other"}]}, format="json")
    found = api_client.get(f"{thread_url}events/", query).json()["results"]
    assert [e["content"] for e in found] == [TEXT]


def test_a_search_for_the_escape_characters_finds_only_them(api_client, thread_url):
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": "a\x00b"}, {"type": "Message", "content": "a␀b"}]},
        format="json")
    assert [e["content"] for e in api_client.get(f"{thread_url}events/", {"q": "a␀b"}).json()["results"]] \
        == ["a␀b"]
    assert api_client.get(f"{thread_url}events/", {"q": "␛"}).json()["results"] == []


def test_state_put_patch_revisions_and_restore_round_trip(api_client, thread_url):
    put = api_client.put(f"{thread_url}state/", {"state": {"k": TEXT, KEY: [TEXT]}, "summary": TEXT},
                         format="json")
    assert put.status_code == 200, put.json()
    patch = api_client.patch(f"{thread_url}state/", json.dumps({"state": {"m": TEXT}}),
                             content_type="application/merge-patch+json")
    assert patch.status_code == 200, patch.json()
    read = api_client.get(f"{thread_url}state/").json()
    assert read["state"] == {"k": TEXT, KEY: [TEXT], "m": TEXT} and read["summary"] == TEXT
    assert api_client.get(f"{thread_url}state/revisions/1/").json()["document"]["state"] == {
        "k": TEXT, KEY: [TEXT]}
    assert api_client.post(f"{thread_url}state/revisions/1/restore/").status_code == 200
    assert api_client.get(f"{thread_url}state/").json()["state"] == {"k": TEXT, KEY: [TEXT]}


def test_clientai_input_step_results_and_history_round_trip(api_client, thread_url):
    assert api_client.post(f"{thread_url}input/", {"input": TEXT}, format="json").status_code == 200
    result = api_client.post(f"{thread_url}results/", {"step": "shell", "result": {"stdout": TEXT}},
                             format="json")
    assert result.status_code == 200, result.json()
    assert api_client.get(f"{thread_url}results/shell/").json()["result"] == {"stdout": TEXT}
    api_client.post(f"{thread_url}input/", {"input": "next"}, format="json")
    raw = api_client.get(f"{thread_url}history/?raw=true").json()
    assert (raw[0]["input"], raw[0]["results"]) == (TEXT, {"shell": {"stdout": TEXT}})


def test_blocks_their_versions_and_recorded_renders_round_trip(api_client, thread_url):
    assert api_client.put(f"{thread_url}blocks/notes/", {"value": TEXT}, format="json").status_code == 201
    live = api_client.put(f"{thread_url}blocks/live/", {"expr": "say " + TEXT + "{{ state.k }}"},
                          format="json")
    assert live.status_code == 201, live.json()
    api_client.put(f"{thread_url}state/", {"state": {"k": TEXT}}, format="json")
    api_client.put(f"{thread_url}blocks/notes/", {"value": "newer"}, format="json")
    blocks = {b["name"]: b for b in api_client.get(f"{thread_url}blocks/").json()["results"]}
    assert blocks["live"]["expr"] == "say " + TEXT + "{{ state.k }}"
    versions = api_client.get(f"{thread_url}blocks/notes/versions/").json()["results"]
    assert [v["value"] for v in versions] == ["newer", TEXT]
    assert api_client.post(f"{thread_url}blocks/notes/versions/1/restore/").json()["value"] == TEXT
    sent = api_client.get(f"{thread_url}context/?record=true").json()
    shown = json.dumps(sent["messages"])
    assert json.dumps(TEXT)[1:-1] in shown and json.dumps("say " + TEXT + TEXT)[1:-1] in shown
    rebuilt = api_client.get(f"/api/v1/renders/{sent['render_id']}/").json()
    assert rebuilt["messages"] == sent["messages"]
    for block in ContextBlock.objects.all():
        assert "\x00" not in (stored(ContextBlock, block.pk, "value") or "")
    for version in ContextBlockVersion.objects.all():
        assert "\x00" not in (stored(ContextBlockVersion, version.pk, "value") or "")
    assert StoredText.objects.filter(text="say " + TEXT + TEXT).exists()


def test_memories_round_trip_and_are_found_around_a_nul(api_client):
    made = api_client.post("/api/v1/memories/", {"user_id": "ann", "content": TEXT, "data": {"d": TEXT}},
                           format="json")
    assert made.status_code == 201, made.json()
    assert "\x00" not in stored(Memory, made.json()["id"], "content")
    found = api_client.get("/api/v1/memories/?user_id=ann&q=then").json()["results"]
    assert [(m["content"], m["data"]) for m in found] == [(TEXT, {"d": TEXT})]


def test_provider_states_runs_and_collapses_round_trip(api_client, thread_url):
    assert api_client.put(f"{thread_url}providers/mem0/", {"state": {"s": TEXT}},
                          format="json").status_code == 200
    assert api_client.get(f"{thread_url}providers/mem0/").json()["state"] == {"s": TEXT}
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": f"turn {i}", "run_id": "r1"} for i in range(3)]}, format="json")
    run = Run.objects.get(run_id="r1")
    failed = api_client.post(f"/api/v1/runs/{run.pk}/fail/", {"error": TEXT}, format="json")
    assert failed.status_code == 200, failed.json()
    assert api_client.get(f"/api/v1/runs/{run.pk}/").json()["error"] == TEXT
    collapsed = api_client.post(f"{thread_url}collapse/", {"start_position": 1, "end_position": 2,
                                                           "summary_text": TEXT}, format="json")
    assert collapsed.status_code == 201, collapsed.json()
    summary = api_client.get(f"{thread_url}events/", {"type": "Summary"}).json()["results"][0]
    assert summary["content"] == TEXT


def test_sync_saves_and_loads_items_and_document(api_client, thread_url):
    saved = api_client.post(f"{thread_url}sync/", {
        "namespace": "fw", "base_revision": 0, "state": {"s": TEXT},
        "items": [{"key": "m1", "event": {"type": "Message", "content": TEXT, "data": {"x": TEXT}}}],
    }, format="json")
    assert saved.status_code == 200, saved.json()
    loaded = api_client.get(f"{thread_url}sync/", {"namespace": "fw"}).json()
    assert loaded["state"] == {"s": TEXT}
    assert [(i["key"], i["event"]["content"], i["event"]["data"]) for i in loaded["items"]] == [
        ("m1", TEXT, {"x": TEXT})]
    again = api_client.post(f"{thread_url}sync/", {
        "namespace": "fw", "base_revision": loaded["revision"],
        "items": [{"key": "m1", "event": {"type": "Message", "content": TEXT, "data": {"x": TEXT}}}],
    }, format="json").json()
    assert again["created"] == 0  # unchanged: the digest of what was loaded matches


def test_agent_sessions_commit_and_read_round_trip(api_client):
    who = {"app": "shop", "user_id": "ann", "key": "s1"}
    assert api_client.post("/api/v1/agent-sessions/", {**who, "state": {"a": TEXT}},
                           format="json").status_code == 201
    committed = api_client.post("/api/v1/agent-sessions/commit/", {
        **who, "events": [{"type": "Message", "content": TEXT, "data": {"raw": TEXT}}],
        "state": {"b": TEXT}, "user_state": {"u": TEXT}}, format="json")
    assert committed.status_code == 200, committed.json()
    read = api_client.get("/api/v1/agent-sessions/read/", who).json()
    assert read["state"] == {"a": TEXT, "b": TEXT} and read["user_state"] == {"u": TEXT}
    assert [(e["content"], e["data"]) for e in read["events"]] == [(TEXT, {"raw": TEXT})]


def test_export_then_import_round_trips_in_both_formats(api_client, thread_url):
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "role": "user", "content": TEXT, "data": {"x": TEXT}},
        {"type": "Message", "role": "assistant", "content": "fine " + TEXT}]}, format="json")
    api_client.put(f"{thread_url}state/", {"state": {"s": TEXT}}, format="json")
    api_client.put(f"{thread_url}blocks/notes/", {"value": TEXT}, format="json")
    exported = response_json(api_client.get(f"{thread_url}export/"))
    assert exported["events"][0]["content"] == TEXT
    copy = api_client.post("/api/v1/threads/import/?session_key=copy", exported, format="json")
    assert copy.status_code == 201, copy.json()
    url = f"/api/v1/threads/{copy.json()['id']}/"
    assert [(e["content"], e["data"]) for e in api_client.get(f"{url}events/").json()["results"]] == [
        (TEXT, {"x": TEXT}), ("fine " + TEXT, None)]
    assert api_client.get(f"{url}state/").json()["state"] == {"s": TEXT}
    assert api_client.get(f"{url}blocks/").json()["results"][0]["value"] == TEXT
    assert response_json(api_client.get(f"{url}export/"))["events"] == exported["events"]

    peteos = api_client.get(f"{thread_url}export/?format=peteos").json()
    again = api_client.post("/api/v1/threads/import/?session_key=pete", peteos, format="json")
    assert again.status_code == 201, again.json()
    back = api_client.get(f"/api/v1/threads/{again.json()['id']}/export/?format=peteos").json()
    assert [m["content"] for m in back["messages"]] == [m["content"] for m in peteos["messages"]]
    assert TEXT in json.dumps(back["messages"], ensure_ascii=False) or \
        json.dumps(TEXT)[1:-1] in json.dumps(back["messages"])


@pytest.mark.parametrize(("body", "place"), [
    ({"events": [{"type": "Message", "role": "a\x00"}]}, "events[0].role"),
    ({"events": [{"type": "Message", "call_id": "\x00"}]}, "events[0].call_id"),
    ({"events": [{"type": "Message", "client_id": "c\x00"}]}, "events[0].client_id"),
    ({"events": [{"type": "Message", "run_id": "r\x00"}]}, "events[0].run_id"),
    ({"events": [{"type": "Message", "step": "s\x00"}]}, "events[0].step"),
    ({"events": [{"type": "Message", "anchor": "\x00"}]}, "events[0].anchor"),
])
def test_a_nul_in_a_name_or_id_is_refused_naming_it(api_client, thread_url, body, place):
    response = api_client.post(f"{thread_url}events/", body, format="json")
    assert response.status_code == 400, response.json()
    assert place in response.json()["error"]["details"]
    assert Event.objects.count() == 0


def test_names_in_sync_and_import_refuse_nul_on_both_databases(api_client, thread_url):
    sync = api_client.post(f"{thread_url}sync/", {"namespace": "fw", "items": [
        {"key": "m\x00", "event": {"type": "Message"}}]}, format="json")
    assert sync.status_code == 400 and "items[0].key" in sync.json()["error"]["details"]
    api_client.post(f"{thread_url}events/", {"events": [{"type": "Message", "content": "x"}]},
                    format="json")
    exported = response_json(api_client.get(f"{thread_url}export/"))
    for query, change in (("", {"session": {"key": "s\x00"}}),
                          ("", {"thread": {**exported["thread"], "name": "t\x00"}}),
                          ("?session_key=copy", {"blocks": [{"name": "b\x00", "value": "v"}]})):
        response = api_client.post(f"/api/v1/threads/import/{query}", {**exported, **change},
                                   format="json")
        assert response.status_code == 400, (change, response.json())
    assert Event.objects.count() == 1


def test_a_model_name_with_a_nul_is_not_recorded_as_a_model(api_client, thread_url):
    response = api_client.post(f"{thread_url}events/", {"events": [
        {"type": "LLMComplete", "data": {"model": "gpt\x00", "out": TEXT}}]}, format="json")
    assert response.status_code == 201, response.json()
    assert api_client.get(f"{thread_url}events/").json()["results"][0]["data"]["model"] == "gpt\x00"


@pytest.mark.parametrize(("raw", "place"), [
    ('{"events": [{"type": "Message", "data": {"x": NaN}}]}', "events[0].data.x"),
    ('{"events": [{"type": "Message", "data": [1, Infinity]}]}', "events[0].data[1]"),
    ('{"events": [{"type": "Message", "data": {"a": {"b": -Infinity}}}]}', "events[0].data.a.b"),
    ('{"events": [{"type": "Message", "data": {"big": 1e999}}]}', "events[0].data.big"),
])
def test_numbers_json_cannot_hold_are_refused_naming_where(api_client, thread_url, raw, place):
    response = api_client.post(f"{thread_url}events/", raw, content_type="application/json")
    assert response.status_code == 400, response.content
    assert place in response.json()["error"]["details"]
    assert Event.objects.count() == 0


def test_nan_in_state_is_refused(api_client, thread_url):
    response = api_client.put(f"{thread_url}state/", '{"state": {"n": NaN}}',
                              content_type="application/json")
    assert response.status_code == 400 and "state.n" in response.json()["error"]["details"]
