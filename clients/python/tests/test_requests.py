"""What each client call sends and what it makes of the answer, through both clients."""

from __future__ import annotations

import base64
import hashlib
import json

import contextstore_client as cs
import httpx
import pytest
from client_fakes import TOKEN, error, handle_of, respond, settle, thread_json
from contextstore_client import AsyncThreadHandle, ThreadHandle

pytestmark = pytest.mark.anyio

STATE = {"state": {"plan": []}, "memory": [], "revision": 3}


def event_json(seq: int, content: str = "", **changes: object) -> dict[str, object]:
    return {"id": 100 + seq, "seq": seq, "position": seq, "type": "Message", "content": content, **changes}


async def test_a_thread_is_ensured_with_the_token_and_the_clients_name(connect, api):
    api.on("POST", "threads/ensure/", thread_json())
    handle = await settle(connect().thread("conversation-42", user_id="ann", agent="helper"))
    assert isinstance(handle, ThreadHandle | AsyncThreadHandle) and handle.id == 7
    assert handle.thread.session_key == "conversation-42"
    sent = api.seen[0]
    assert str(sent.url) == "http://cs.test/api/v1/threads/ensure/"
    assert sent.headers["Authorization"] == f"Bearer {TOKEN}"
    assert sent.headers["User-Agent"] == f"contextstore-client/{cs.__version__}"
    assert json.loads(sent.content) == {"session_key": "conversation-42", "user_id": "ann",
                                        "agent": "helper", "name": "main"}


async def test_appended_events_get_a_client_id_unless_they_bring_one(connect, api):
    api.on("POST", "threads/7/events/", {"events": [
        {"seq": 1, "id": 101, "token_count": 2, "client_id": "generated"},
        {"seq": 2, "id": 102, "token_count": 1, "client_id": "mine"}]})
    appended = await settle(handle_of(connect()).append([
        {"type": "Message", "role": "user", "content": "Hi"},
        {"type": "Message", "role": "assistant", "content": "Hello", "client_id": "mine"}]))
    assert appended == [cs.AppendedEvent(1, 101, 2, "generated"), cs.AppendedEvent(2, 102, 1, "mine")]
    first, second = api.bodies()[0]["events"]
    assert len(first["client_id"]) == 32 and second["client_id"] == "mine"


async def test_a_render_is_recorded_and_the_next_llm_call_names_it(connect, api):
    api.on("GET", "threads/7/context/", {"messages": [{"role": "user", "content": "Hi"}],
                                         "stats": {"total_tokens": 3}, "format": "openai",
                                         "render_id": "r-1"})
    api.on("POST", "threads/7/events/", {"events": [
        {"seq": 2, "id": 2, "token_count": 0, "client_id": "a"},
        {"seq": 3, "id": 3, "token_count": 0, "client_id": "b"}]})
    handle = handle_of(connect())
    context = await settle(handle.context(max_tokens=8000, format="openai"))
    assert context == cs.Context(messages=[{"role": "user", "content": "Hi"}], stats={"total_tokens": 3},
                                 format="openai", render_id="r-1")
    assert dict(api.seen[0].url.params) == {"max_tokens": "8000", "strip_thinking": "false",
                                            "format": "openai", "on_oversize": "skip", "record": "true"}
    await settle(handle.log_llm_call("gpt-4o", input_tokens=3, output_tokens=5, temperature=0.2))
    start, complete = api.bodies("POST")[0]["events"]
    assert start["type"] == "LLMCallStart" and start["data"] == {
        "model": "gpt-4o", "temperature": 0.2, "render_id": "r-1"}
    assert complete["data"] == {"model": "gpt-4o", "input_tokens": 3, "output_tokens": 5,
                                "render_id": "r-1"}


async def test_a_read_only_token_gets_the_render_unrecorded(connect, api):
    api.on("GET", "threads/7/context/", lambda request: (
        respond(error(403, "scope", "read scope")) if request.url.params["record"] == "true"
        else httpx.Response(200, json={"messages": [], "stats": {}, "format": "raw"})))
    context = await settle(handle_of(connect()).context())
    assert context.render_id is None and [r.url.params["record"] for r in api.seen] == ["true", "false"]


async def test_events_follow_the_pages_and_filters_go_as_parameters(connect, api):
    api.on("GET", "threads/7/events/", lambda request: httpx.Response(200, json=(
        {"results": [event_json(3, "c")], "next": None} if "cursor" in request.url.params else
        {"results": [event_json(1, "a"), event_json(2, "b")],
         "next": "http://cs.test/api/v1/threads/7/events/?cursor=x"})))
    handle = handle_of(connect())
    events = await settle(handle.events(type=["Message", "ToolCall"], q="a", visible=True))
    assert [e.content for e in events] == ["a", "b", "c"] and isinstance(events[0], cs.Event)
    assert api.seen[0].url.params.get_list("type") == ["Message", "ToolCall"]
    assert api.seen[0].url.params["visible"] == "true" and api.seen[0].url.params["q"] == "a"
    streamed = await settle(handle.iter_events(type="Message"))
    assert [e.seq for e in streamed] == [1, 2, 3]


async def test_a_conditional_state_write_sends_if_match_and_a_stale_one_raises(connect, api):
    api.on("PATCH", "threads/7/state/", STATE, error(412, "stale_revision", "the state changed", current=4))
    handle = handle_of(connect())
    state = await settle(handle.patch_state({"plan": []}, if_match=2, reason="planning"))
    assert state == cs.State(state={"plan": []}, memory=[], revision=3)
    assert api.seen[0].headers["If-Match"] == '"2"'
    assert api.bodies()[0] == {"reason": "planning", "state": {"plan": []}}
    with pytest.raises(cs.StaleRevision) as stale:
        await settle(handle.patch_state({"plan": ["x"]}, if_match=3))
    assert stale.value.details == {"current": 4} and len(api.seen) == 2  # never resent


async def test_blocks_are_put_with_their_placement_and_names_are_one_path_segment(connect, api):
    block = {"name": "a/b?", "value": "You are terse.", "placement": "prefix", "order": 1, "version": 2}
    api.on("PUT", "threads/7/blocks/a%2Fb%3F/", block)
    api.on("GET", "threads/7/blocks/", {"results": [block]})
    handle = handle_of(connect())
    put = await settle(handle.put_block("a/b?", value="You are terse.", placement="prefix", order=1))
    assert put == cs.Block(name="a/b?", value="You are terse.", placement="prefix", order=1, version=2)
    assert api.seen[0].url.raw_path == b"/api/v1/threads/7/blocks/a%2Fb%3F/"
    assert api.bodies()[0] == {"value": "You are terse.", "placement": "prefix", "order": 1}
    assert await settle(handle.blocks()) == [put]


async def test_block_versions_and_their_restore_address_the_name_as_one_path_segment(connect, api):
    versions = [{"id": 1, "name": "what?", "version": 1, "value": "old", "deleted": False}]
    api.on("GET", "threads/7/blocks/what%3F/versions/", {"results": versions, "next": None})
    api.on("POST", "threads/7/blocks/what%3F/versions/1/restore/", {"name": "what?", "value": "old",
                                                                     "version": 3})
    handle = handle_of(connect())
    assert await settle(handle.block_versions("what?")) == versions
    restored = await settle(handle.restore_block("what?", 1))
    assert restored.version == 3 and restored.value == "old"
    assert [r.url.params for r in api.seen] == [httpx.QueryParams(), httpx.QueryParams()]


async def test_a_missing_step_result_is_none_as_in_clientai(connect, api):
    api.on("GET", "threads/7/results/plan/", {"step": "plan", "result": ["a"]})
    handle = handle_of(connect())
    assert await settle(handle.get_step_result("plan")) == ["a"]
    assert await settle(handle.get_step_result("missing")) is None


async def test_removing_the_summarizer_setting_sends_a_json_null(connect, api):
    api.on("PUT", "threads/7/summarizer/", thread_json(summarizer=None))
    handle = handle_of(connect(), summarizer={"token_budget": {"max_tokens": 10}})
    thread = await settle(handle.configure_summarizer(None))
    assert api.seen[0].content == b"null" and thread.summarizer is None and handle.thread is thread


async def test_unclear_undoes_the_newest_clear_not_undone(connect, api):
    clears = [{"id": 1, "thread": 7, "undone_at": None}, {"id": 2, "thread": 7, "undone_at": None},
              {"id": 3, "thread": 7, "undone_at": "2026-01-01T00:00:00Z"}]
    api.on("GET", "threads/7/clears/", {"results": clears, "next": None})
    api.on("POST", "threads/7/clears/2/undo/", {"clear": {**clears[1], "undone_at": "now"}})
    undone = await settle(handle_of(connect()).unclear())
    assert undone == cs.Clear(id=2, thread=7, undone_at="now")


async def test_unclear_without_a_clear_to_undo_raises_not_found(connect, api):
    api.on("GET", "threads/7/clears/", {"results": [], "next": None})
    with pytest.raises(cs.NotFound):
        await settle(handle_of(connect()).unclear())


async def test_a_fork_is_a_new_handle_of_the_same_client(connect, api):
    api.on("POST", "threads/7/fork/", thread_json(id=8, name="alt", parent=7))
    handle = handle_of(connect())
    fork = await settle(handle.fork("alt", start_position=1, end_position=4))
    assert type(fork) is type(handle) and fork.id == 8 and fork.thread.parent == 7
    assert api.bodies()[0] == {"name": "alt", "start_position": 1, "end_position": 4, "system_prompt": None}


async def test_ranges_ask_to_widen_only_when_told(connect, api):
    collapse = {"id": 5, "thread": 7, "start_position": 1, "end_position": 6,
                "summary_event": event_json(9, "Earlier.", type="Summary")}
    api.on("POST", "threads/7/collapse/", collapse, collapse, {"job_id": "j-1"})
    api.on("POST", "threads/7/fork/", thread_json(id=8, name="alt", parent=7))
    handle = handle_of(connect())
    assert (await settle(handle.collapse(1, 4, "Earlier."))).end_position == 6
    await settle(handle.collapse(1, 4, "Earlier.", widen=True))
    assert await settle(handle.summarize(1, 4, widen=True)) == "j-1"
    await settle(handle.fork("alt", end_position=4, widen=True))
    plain, widened, summarized, forked = api.bodies()
    assert "widen" not in plain and widened["widen"] is summarized["widen"] is forked["widen"] is True
    assert summarized["summarize"] is True and forked["end_position"] == 4


async def test_a_render_sends_its_start_chunk_and_names_its_tools_by_hash(connect, api):
    api.on("GET", "threads/7/context/", {"messages": [], "stats": {}, "format": "raw"})
    tools = [{"name": "weather", "input_schema": {"type": "object"}}]
    await settle(handle_of(connect()).context(start_chunk=0.1, tools=tools, record=False))
    params = dict(api.seen[0].url.params)
    assert params["start_chunk"] == "0.1"
    # the server keeps a logged call's data.tools under the sha256 of this JSON
    text = json.dumps(tools, sort_keys=True, separators=(",", ":"))
    assert params["tools_hash"] == hashlib.sha256(text.encode()).hexdigest()


async def test_recent_history_is_text_or_the_raw_interactions(connect, api):
    api.on("GET", "threads/7/history/", lambda request: httpx.Response(200, json=(
        [{"input": "hi"}] if request.url.params["raw"] == "true" else {"text": "User: hi"})))
    handle = handle_of(connect())
    assert await settle(handle.get_recent_history(2)) == "User: hi"
    assert await settle(handle.get_recent_history(2, raw=True)) == [{"input": "hi"}]


async def test_sessions_are_upserted_and_listed_across_pages(connect, api):
    session = {"id": 1, "key": "k", "user_id": "ann", "newer_field": "ignored"}
    api.on("POST", "sessions/", (201, session), (200, session))
    api.on("GET", "sessions/", lambda request: httpx.Response(200, json=(
        {"results": [session], "next": "http://cs.test/api/v1/sessions/?page=2"}
        if "page" not in request.url.params else {"results": [{**session, "id": 2}], "next": None})))
    store = connect()
    assert (await settle(store.upsert_session("k", user_id="ann"))).created is True
    assert (await settle(store.upsert_session("k", user_id="ann"))).created is False
    assert [s.id for s in await settle(store.sessions(user_id="ann", archived=False))] == [1, 2]
    assert api.seen[2].url.params["archived"] == "false"
    assert [s.id for s in await settle(store.iter_sessions())] == [1, 2]


async def test_agent_session_commits_carry_a_batch_id_and_blobs_go_as_base64(connect, api):
    api.on("POST", "agent-sessions/commit/", {"revision": 1, "last_seq": 1, "events": []})
    api.on("GET", "agent-sessions/blobs/", [{"key": "cp/1", "data": base64.b64encode(b"\x00bytes").decode(),
                                            "meta": {}, "content_type": "", "size": 6}])
    store = connect()
    await settle(store.commit_agent_session("app", "ann", "s1", events=[{"type": "Checkpoint"}],
                                            blobs={"cp/1": b"\x00bytes"}, if_match=0))
    body = api.bodies()[0]
    assert len(body["batch_id"]) == 32 and body["events"][0]["client_id"]
    assert body["blobs"] == [{"key": "cp/1", "data": base64.b64encode(b"\x00bytes").decode()}]
    assert api.seen[0].headers["If-Match"] == '"0"'
    blobs = await settle(store.agent_blobs("app", "ann", "s1", ["cp/1"]))
    assert blobs["cp/1"]["data"] == b"\x00bytes"


async def test_a_missing_agent_session_reads_as_none(connect, api):
    assert await settle(connect().read_agent_session("app", "ann", "nobody")) is None


async def test_a_large_sync_save_goes_as_parts_of_one_upload(connect, api):
    api.on("POST", "threads/7/sync/", {"revision": 5})
    items = [{"key": f"k{i}", "event": {"type": "Message", "content": str(i)}} for i in range(5)]
    result = await settle(handle_of(connect()).sync_save("fw", items=items, part_size=2, state={"a": 1}))
    parts = api.bodies()
    assert result == {"revision": 5} and [len(p["items"]) for p in parts] == [2, 2, 1]
    assert len({p["upload_id"] for p in parts}) == 1 and [p["part"] for p in parts] == [0, 1, 2]
    assert "state" not in parts[0] and parts[-1]["state"] == {"a": 1}


async def test_a_sync_tracker_sends_only_what_changed(connect, api, flavour):
    event = {"type": "Message", "content": "same"}
    api.on("GET", "threads/7/sync/", {"revision": 4, "state": {}, "summary": "", "document": None, "items": [
        {"key": "a", "own": True, "digest": cs.item_digest(event), "event": event_json(1, "same")}]})
    api.on("POST", "threads/7/sync/", {"revision": 5})
    handle = handle_of(connect())
    tracker = cs.SyncTracker(handle, "fw") if flavour == "sync" else cs.AsyncSyncTracker(handle, "fw")
    loaded = await settle(tracker.load())
    assert loaded.revision == 4 and loaded.items[0].event.content == "same"
    assert await settle(tracker.save([("a", event)])) is None  # nothing changed: nothing sent
    await settle(tracker.save([("b", {"type": "Message", "content": "new"})]))
    body = api.bodies("POST")[0]
    assert [i["key"] for i in body["items"]] == ["b"] and body["removed"] == ["a"]
    assert body["base_revision"] == 4 and tracker.revision == 5


@pytest.mark.parametrize("text", [
    '{"n": [1, -0.0, 0.1, 5e-324, 1.7976931348623157e308, 123456789012345678901234567890, 1e400], '
    '"b": "caf\\u00e9 \\u2028 \\ud83d\\ude00", "a": 1, "a": null, "c": {"x": true, "y": false}}',
    '{"lone": "\\ud800 half a pair", "n": 1}',  # a lone surrogate: json takes it, pydantic_core not
])
async def test_an_answer_reads_as_json_reads_it(connect, api, text):
    api.on("GET", "agent-sessions/read/", lambda request: httpx.Response(200, content=text.encode()))
    got = await settle(connect().read_agent_session("app", "ann", "s"))
    expected = {**json.loads(text), "blobs": {}}
    assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert got.keys() == expected.keys()
