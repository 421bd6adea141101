"""The Python client against a live server, and its retry rules against a mock transport."""

import importlib.util
import subprocess
import sys
import time

import contextstore_client as cs_client
import httpx
import pytest

from contextstore.models import Event
from tests.client_flavours import FLAVOURS, client_flavour
from tests.conftest import messages


@pytest.fixture(params=FLAVOURS)
def flavour(request):
    """Each test that takes it runs twice: through ContextStore and AsyncContextStore."""
    with client_flavour(request.param) as made:
        yield made


@pytest.fixture
def cs(flavour, live_server, transactional_db, token):
    with flavour.connect(live_server.url, token[1], retries=1, backoff=0.01) as store:
        yield store


def test_importing_the_client_does_not_import_django():
    code = ("import sys, contextstore_client; "
            "sys.exit(any(m == 'django' or m.startswith('django.') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_sessions_threads_and_events_round_trip(cs):
    session = cs.upsert_session("conv", user_id="ann", agent="bot", metadata={"b": 1, "a": 2})
    assert session.created and list(session.metadata) == ["b", "a"]
    assert not cs.upsert_session("conv", user_id="ann").created
    assert [s.key for s in cs.sessions(user_id="ann")] == ["conv"]
    assert cs.update_session(session.id, title="T").title == "T"
    assert cs.session(session.id).title == "T"

    thread = cs.thread("conv", user_id="ann", agent="bot")
    assert thread.thread.session == session.id and thread.thread.name == "main"
    assert [t.id for t in cs.session_threads(session.id)] == [thread.id]
    appended = thread.append(messages(3, words=5) + [{"type": "Error", "content": "bad",
                                                      "client_id": "mine"}])
    assert [a.seq for a in appended] == [1, 2, 3, 4]
    assert appended[3].client_id == "mine" and all(a.client_id for a in appended)
    one = thread.append_one("Message", "later", role="user", run_id="r1")
    assert one.seq == 5
    assert [e.seq for e in thread.events(type=["Error", "Message"], limit=2)] == [4, 5]
    assert [e.seq for e in thread.events(type="Error,Message")] == [1, 2, 3, 4, 5]
    odd = thread.append_one("tool.call,v2", "a type name with a comma").seq
    assert [e.seq for e in thread.events(type=["tool.call,v2"])] == [odd]
    assert [e.seq for e in thread.events(type=["tool.call,v2", "Error"])] == [4, odd]
    assert [e.seq for e in thread.iter_events(page_size=2)] == [1, 2, 3, 4, 5, 6]
    assert thread.events(q="LATER")[0].run_id == "r1"
    assert thread.refresh().event_count == 6
    assert cs.get_thread(thread.id).thread.last_seq == 6
    cs.delete_session(session.id)
    with pytest.raises(cs_client.NotFound):
        cs.session(session.id)


def test_a_retried_append_with_the_same_client_ids_does_not_duplicate(cs, thread):
    handle = cs.get_thread(thread.pk)
    batch = [{"type": "Message", "content": "x", "client_id": "k1"}]
    assert handle.append(batch)[0].seq == handle.append(batch)[0].seq == 1
    with pytest.raises(cs_client.Conflict) as conflict:
        handle.append([{"type": "Message", "content": "other", "client_id": "k1"}])
    assert conflict.value.code == "idempotency_conflict" and conflict.value.status == 409
    assert Event.objects.filter(thread=thread).count() == 1


def test_collapse_blocks_context_window_fork_and_export(cs, thread):
    handle = cs.get_thread(thread.pk)
    handle.append(messages(6, words=8))
    collapse = handle.collapse(2, 3, "two turns")
    assert (collapse.start_position, collapse.summary_event.type) == (2, "Summary")
    assert cs.undo_collapse(collapse.id).undone_at is not None
    assert handle.put_block("persona", value="Be kind.", placement="prefix").version == 1
    handle.put_block("goal", expr="{{ state.goal }}")
    assert [b.name for b in handle.blocks()] == ["persona", "goal"]
    handle.delete_block("goal")
    context = handle.context(max_tokens=1000, strip_thinking=True)
    assert context.messages[0]["section"] == "prefix" and context.stats["max_tokens"] == 1000
    window = handle.window(count=2)
    assert [e.seq for e in window.events] == [5, 6] and not window.covers_all
    assert handle.window(max_tokens=handle.total_tokens()).covers_all
    child = handle.fork("branch", start_position=1, end_position=2, system_prompt="short")
    assert child.thread.parent == thread.pk and len(child.events()) == 2
    exported = handle.export()
    copy = cs.import_thread(exported, session_key="copy")
    assert copy.thread.event_count == exported["events"].__len__()
    peteos = handle.export("peteos")
    assert len(cs.import_thread(peteos, session_key="pete").events()) == len(peteos["messages"])


def test_state_with_if_match_and_revisions(cs, thread):
    handle = cs.get_thread(thread.pk)
    first = handle.put_state({"plan": ["a"]}, memory=[{"fact": 1}], reason="start", if_match=0)
    assert first.revision == 1
    patched = handle.patch_state({"plan": None, "done": True}, if_match=first.revision)
    assert patched.state == {"done": True} and patched.memory == [{"fact": 1}]
    with pytest.raises(cs_client.StaleRevision) as stale:
        handle.put_state({"x": 1}, if_match=first.revision)
    assert stale.value.details["current_revision"] == 2
    assert handle.state().state == {"done": True}
    assert [r.revision for r in handle.revisions()] == [0, 1, 2]  # r0: the starting document
    assert handle.restore(1).state == {"plan": ["a"]}
    detail = handle.revision(2)
    assert detail["document"]["state"] == {"done": True} and detail["changed"] == ["state"]
    assert {"op": "remove", "path": "/state/plan"} in detail["diff"]
    with pytest.raises(cs_client.InvalidInput) as bad:
        handle.put_state({"x": 1}, memory=["not an object"])
    assert "memory" in str(bad.value.details)
    assert handle.patch_state(summary="Chose the primary.").summary == "Chose the primary."
    assert handle.state().state == {"plan": ["a"]}


def test_clientai_operations(cs, thread):
    handle = cs.get_thread(thread.pk)
    assert handle.set_input("q1").current_input == "q1"
    assert handle.set_step_result("analyze", {"ok": True}) == {"ok": True}
    assert handle.get_step_result("analyze") == {"ok": True}
    assert handle.get_step_result("missing") is None
    assert handle.increment_iteration() == 1
    handle.set_input("q2")
    assert handle.get_recent_history(raw=True)[0]["input"] == "q1"
    assert handle.get_recent_history(n=1).startswith("Previous Interactions:")
    assert handle.set_max_history_size(0).max_history_size == 0
    assert handle.reset().current_input is None
    assert handle.reset_all().iteration == 0
    assert handle.get_recent_history() == "No interactions available."
    handle.append_one("Message", "hello")
    assert handle.clear_context() >= 1
    assert handle.context().stats["sections"]["history"]["events_included"] == 0


def test_runs_providers_memories_and_jobs(cs, thread):
    handle = cs.get_thread(thread.pk)
    handle.append([{"type": "Task", "run_id": "r-1"}, {"type": "Task", "run_id": "r-2"},
                   {"type": "Task", "run_id": "r-3"}])
    r1, r2, r3 = handle.runs()
    assert cs.complete_run(r1.id).status == "completed"
    assert cs.fail_run(r2.id, "boom").error == "boom"
    assert cs.interrupt_run(r3.id).status == "interrupted"
    assert cs.run(r1.id).run_id == "r-1"
    assert handle.provider_state("mem") is None
    assert handle.put_provider_state("mem", {"u": 1}).version == 1
    assert handle.provider_state("mem").state == {"u": 1}
    memory = cs.remember("likes tea", user_id="ann", key="drink")
    assert memory.created and not cs.remember("likes coffee", user_id="ann", key="drink").created
    assert [m.content for m in cs.recall(user_id="ann", q="coffee")] == ["likes coffee"]
    with pytest.raises(cs_client.NotFound):
        cs.job("00000000-0000-0000-0000-000000000000")


def test_summarizer_settings_and_summarize_jobs(cs, thread):
    handle = cs.get_thread(thread.pk)
    handle.append(messages(4, words=5))
    configured = handle.configure_summarizer({"token_budget": {"max_tokens": 8000}})
    assert configured.summarizer["token_budget"]["max_tokens"] == 8000
    assert handle.configure_summarizer({}).summarizer == {}
    assert handle.configure_summarizer(None).summarizer is None
    job = cs.job(handle.summarize(1, 2))
    assert (job.kind, job.thread) == ("range", thread.pk)


def test_auth_and_scope_errors_are_typed(flavour, live_server, transactional_db, read_token, thread):
    with flavour.connect(live_server.url, "cs_wrong", retries=0) as bad:
        with pytest.raises(cs_client.Unauthorized):
            bad.get_thread(thread.pk)
    with flavour.connect(live_server.url, read_token[1], retries=0) as reader:
        handle = reader.get_thread(thread.pk)
        with pytest.raises(cs_client.Forbidden) as denied:
            handle.append_one("Message", "x")
        assert denied.value.code == "scope"


# ---------------------------------------------------------------- retries (no server needed)

def scripted(answers: list) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return httpx.MockTransport(handler), seen


def ok_append() -> httpx.Response:
    return httpx.Response(201, json={"events": [{"seq": 1, "id": 1, "token_count": 1,
                                                 "client_id": "x"}], "created": 1})


def handle_for(flavour, transport: httpx.MockTransport, retries: int = 3):
    store = flavour.connect("http://cs.test", "cs_t", transport=transport, retries=retries, backoff=0.001)
    return flavour.handle(store, cs_client.Thread(id=7, session=1, session_key="s", name="main"))


def test_appends_are_retried_with_the_same_client_ids_after_a_lost_answer(flavour):
    transport, seen = scripted([httpx.ReadTimeout("lost"), httpx.Response(503), ok_append()])
    handle_for(flavour, transport).append([{"type": "Message", "content": "x"}])
    bodies = [r.content for r in seen]
    assert len(bodies) == 3 and bodies[0] == bodies[1] == bodies[2]
    assert b'"client_id"' in bodies[0]


def test_non_idempotent_calls_are_not_repeated_after_a_server_error(flavour):
    transport, seen = scripted([httpx.Response(500, json={"error": {
        "code": "server_error", "message": "boom", "details": {}}})])
    with pytest.raises(cs_client.ServerError):
        handle_for(flavour, transport).increment_iteration()
    assert len(seen) == 1


def test_connection_errors_and_throttling_are_retried_then_reported(flavour):
    transport, seen = scripted([httpx.ConnectError("refused"),
                                httpx.Response(429, headers={"Retry-After": "0"}, json={"error": {
                                    "code": "throttled", "message": "slow down", "details": {}}}),
                                httpx.Response(200, json={"iteration": 3})])
    assert handle_for(flavour, transport).increment_iteration() == 3
    assert len(seen) == 3
    transport, seen = scripted([httpx.ConnectError("refused")] * 3)
    with pytest.raises(cs_client.ConnectionFailed):
        handle_for(flavour, transport, retries=2).state()
    assert len(seen) == 3


def test_concurrent_clients_with_replayed_batches_lose_and_duplicate_nothing(flavour, cs, live_server,
                                                                             token, thread):
    """Four agents append to one thread at once, each sending every batch twice (a retry after
    a lost answer): every event is stored once and seqs stay gap-free."""
    from concurrent.futures import ThreadPoolExecutor

    def agent(name: str) -> list[int]:
        with flavour.connect(live_server.url, token[1], retries=3, backoff=0.01) as mine:
            handle = mine.get_thread(thread.pk)
            seqs = []
            for b in range(5):
                batch = [{"type": "Message", "content": f"{name} {b} {i}",
                          "client_id": f"{name}-{b}-{i}"} for i in range(4)]
                first = handle.append(batch)
                assert [a.seq for a in handle.append(batch)] == [a.seq for a in first]
                seqs += [a.seq for a in first]
            return seqs

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(agent, ["a", "b", "c", "d"]))
    every = sorted(s for seqs in results for s in seqs)
    assert every == list(range(1, 81))
    stored = cs.get_thread(thread.pk).events(page_size=1000)
    assert len({e.client_id for e in stored}) == len(stored) == 80


def test_a_conditional_state_write_is_not_resent_after_a_lost_answer(flavour):
    transport, seen = scripted([httpx.ReadTimeout("lost")])
    with pytest.raises(cs_client.ConnectionFailed):
        handle_for(flavour, transport).put_state({"k": 1}, if_match=3)
    assert len(seen) == 1 and seen[0].headers["If-Match"] == '"3"'
    transport, seen = scripted([httpx.ReadTimeout("lost"), httpx.Response(200, json={
        "state": {"k": 1}, "memory": [], "revision": 4})])
    assert handle_for(flavour, transport).put_state({"k": 1}).revision == 4  # unconditional: resent
    assert len(seen) == 2


def test_retry_after_is_a_floor_under_the_backoff_and_other_5xx_retry_only_idempotent_calls(flavour):
    busy = {"error": {"code": "unavailable", "message": "busy", "details": {}}}
    transport, seen = scripted([httpx.Response(503, headers={"Retry-After": "0.4"}, json=busy),
                                httpx.Response(502, json=busy),
                                httpx.Response(200, json={"state": {}, "memory": [], "revision": 2})])
    started = time.monotonic()
    assert handle_for(flavour, transport).state().revision == 2  # a GET: 502 is retried too
    assert time.monotonic() - started >= 0.4  # backoff is 1 ms; the server asked for 400
    assert len(seen) == 3
    transport, seen = scripted([httpx.Response(502, json=busy)] * 5)
    with pytest.raises(cs_client.ServerError) as caught:
        handle_for(flavour, transport, retries=2).state()
    assert caught.value.status == 502 and len(seen) == 3  # the last error, after 2 retries


def test_the_first_attempt_keeps_every_retry_rule(flavour):
    """The first attempt runs outside tenacity: a 503 on it is still retried after its
    Retry-After, a lost answer to a POST that is unsafe to repeat is not, a 4xx is raised at once,
    and retries=0 sends once."""
    busy = {"error": {"code": "unavailable", "message": "busy", "details": {}}}
    transport, seen = scripted([httpx.Response(503, headers={"Retry-After": "0.3"}, json=busy),
                                httpx.Response(200, json={"iteration": 4})])
    started = time.monotonic()
    assert handle_for(flavour, transport).increment_iteration() == 4  # a POST: 503 always retried
    assert time.monotonic() - started >= 0.3 and len(seen) == 2
    transport, seen = scripted([httpx.ReadTimeout("lost"), httpx.Response(200, json={"iteration": 4})])
    with pytest.raises(cs_client.ConnectionFailed) as caught:
        handle_for(flavour, transport).increment_iteration()
    assert len(seen) == 1 and isinstance(caught.value.__cause__, httpx.ReadTimeout)
    transport, seen = scripted([httpx.Response(404, json={"error": {
        "code": "not_found", "message": "gone", "details": {}}})])
    with pytest.raises(cs_client.NotFound):
        handle_for(flavour, transport).state()
    assert len(seen) == 1
    transport, seen = scripted([httpx.Response(503, json=busy), httpx.Response(200, json={"iteration": 4})])
    with pytest.raises(cs_client.ServerError) as failed:
        handle_for(flavour, transport, retries=0).increment_iteration()
    assert failed.value.status == 503 and len(seen) == 1
    transport, seen = scripted([httpx.ConnectError("refused")] * 2
                               + [httpx.Response(200, json={"iteration": 4})])
    with pytest.raises(cs_client.ConnectionFailed) as refused:
        handle_for(flavour, transport, retries=1).increment_iteration()
    assert len(seen) == 2 and isinstance(refused.value.__cause__, httpx.ConnectError)


def test_the_loop_context_call_log_links_the_call_to_its_render(flavour, cs, live_server, thread,
                                                                 read_token):
    handle = cs.get_thread(thread.pk)
    handle.put_block("persona", value="Be brief.", placement="prefix")
    handle.append(messages(3, words=5))
    ctx = handle.context(format="openai")
    assert ctx.format == "openai" and ctx.render_id and ctx.messages[0]["role"] == "system"
    handle.log_llm_call("gpt-4o", input_tokens=ctx.stats["total_tokens"], output_tokens=5)
    start, done = Event.objects.filter(
        thread=thread, type__in=["LLMCallStart", "LLMComplete"]).order_by("seq")
    assert start.data["render_id"] == done.data["render_id"] == ctx.render_id
    assert handle.llm_call(start.seq)["messages"] == ctx.messages
    handle.put_block("persona", value="Be long.")
    again = handle.context(format="openai")
    assert cs.render(ctx.render_id).messages == ctx.messages
    assert cs.render_diff(ctx.render_id, again.render_id)["prompt_cache_lost"] is True
    assert [v["version"] for v in handle.block_versions("persona")] == [2, 1]
    assert handle.restore_block("persona", 1).value == "Be brief."

    sent = [{"role": "user", "content": "built by hand"}]
    tools = [{"name": "ls", "input_schema": {"type": "object"}}]
    handle.log_llm_call("gpt-4o", messages=sent, tools=tools, params={"temperature": 0})
    own = Event.objects.filter(thread=thread, type="LLMCallStart").latest("seq")
    assert "render_id" not in own.data and len(own.data["message_hashes"]) == 1
    assert handle.llm_call(own.seq)["tools"] == tools and own.data["params"] == {"temperature": 0}

    with flavour.connect(live_server.url, read_token[1], retries=0) as reader:
        unrecorded = reader.get_thread(thread.pk).context()
        assert unrecorded.render_id is None and unrecorded.messages


def test_model_settings_from_the_client(cs, thread):
    handle = cs.get_thread(thread.pk)
    assert handle.set_model(model="gpt-4o", reserve_output=1000)["effective"]["budget"] == 127_000
    assert handle.model_settings()["model"] == "gpt-4o"


def test_the_server_package_holds_no_copy_of_the_client():
    # The old re-export modules are gone: the client and its adapters live only in
    # contextstore_client (clients/python), so nothing of the server shadows or pins them.
    for old in ("contextstore.client", "contextstore.adapters"):
        assert importlib.util.find_spec(old) is None, old
    assert importlib.util.find_spec("contextstore_client.adapters.offline") is not None


def test_block_names_travel_percent_encoded_and_a_slash_is_refused_with_the_rule(cs, thread):
    handle = cs.get_thread(thread.pk)
    name = "plan? #1 100% done"
    handle.put_block(name, value="first")
    handle.put_block(name, value="second")
    assert [v["version"] for v in handle.block_versions(name)] == [2, 1]
    assert handle.restore_block(name, 1).value == "first"
    with pytest.raises(cs_client.ContextStoreError) as refused:
        handle.put_block("team/plan", value="x")
    assert refused.value.status == 400 and 'cannot contain "/"' in str(refused.value)
