"""Replaying a recorded LLM call against a local fake endpoint (services/replays.py)."""

import pytest

from contextstore.errors import Conflict
from contextstore.models import AuditLog, CallReplay, StoredText
from contextstore.selectors.calls import llm_call_at
from contextstore.services.erasure import user_erase
from contextstore.services.events import event_append
from contextstore.services.replays import replay_request, replay_run

SENT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Which tests fail?"}]
TOOLS = [{"name": "run_tests", "description": "Run pytest", "input_schema": {"type": "object"}}]


@pytest.fixture
def call(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "gpt-4o", "messages": SENT, "tools": TOOLS,
                                          "params": {"temperature": 0.3, "stream": True}}},
        {"type": "LLMComplete", "data": {"model": "gpt-4o", "input_tokens": 1000, "output_tokens": 20}}])
    return llm_call_at(thread=thread, seq=1)


def call_replay(**kwargs):
    """Asked as the dashboard asks, then run as the worker runs it."""
    return replay_run(replay_id=replay_request(**kwargs).pk)


def test_a_replay_sends_the_whole_request_and_keeps_answer_usage_and_cost(thread, call, actor, endpoint):
    replay = call_replay(thread=thread, call=call, actor=actor)
    [sent] = endpoint.requests
    assert sent["path"] == "/v1/chat/completions" and sent["auth"] == "Bearer sk-fake"
    assert sent["body"] == {"model": "gpt-4o", "messages": SENT, "temperature": 0.3, "tools": [
        {"type": "function", "function": {"name": "run_tests", "description": "Run pytest",
                                          "parameters": {"type": "object"}}}]}  # no stream
    assert (replay.status, replay.answer, replay.input_tokens, replay.output_tokens) == (
        "ok", "Replayed answer to: Which tests fail?", 1200, 30)
    assert replay.cost is not None and replay.cost > 0 and replay.edited == [] and replay.call_seq == 1
    assert StoredText.objects.filter(sha256=replay.request_hash).exists()
    row = AuditLog.objects.get(action="call.replay")
    assert row.target_id == str(replay.pk) and row.details["status"] == "ok"
    assert row.actor_label == actor.label


def test_an_edited_replay_sends_the_edited_text_and_says_which_changed(thread, call, actor, endpoint):
    replay = call_replay(thread=thread, call=call, actor=actor, model="gpt-4o-mini",
                         edits={0: "Be brief.", 1: "Which tests pass?"})
    body = endpoint.requests[0]["body"]
    assert body["model"] == "gpt-4o-mini" and body["messages"][1]["content"] == "Which tests pass?"
    assert replay.edited == [1] and replay.answer.endswith("Which tests pass?")


def test_a_replay_erased_while_queued_fails_and_sends_nothing(thread, call, actor, endpoint):
    queued = replay_request(thread=thread, call=call, actor=actor)
    StoredText.objects.filter(sha256=queued.request_hash).delete()
    replay = replay_run(replay_id=queued.pk)
    assert replay.status == "error" and "erased" in replay.error and endpoint.requests == []


@pytest.mark.parametrize(("mode", "said"), [("500", "HTTP 500"), ("slow", "did not answer within 1 s")])
def test_a_failing_endpoint_is_kept_as_an_error_never_as_an_answer(thread, call, actor, endpoint, settings,
                                                                    mode, said):
    endpoint.mode = mode
    settings.PLAYGROUND_TIMEOUT = 1.0  # the fake stalls 3 s
    replay = call_replay(thread=thread, call=call, actor=actor)
    assert replay.status == "error" and said in replay.error and replay.answer == ""
    assert replay.input_tokens is None and replay.cost is None
    assert AuditLog.objects.get(action="call.replay").details["status"] == "error"


def test_a_workspace_s_own_endpoint_gets_its_own_key_never_the_global_one(thread, call, actor, endpoint,
                                                                          settings):
    settings.PLAYGROUND_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens there
    settings.PLAYGROUND_WORKSPACES = {thread.workspace.slug: {"base_url": endpoint.base_url}}
    assert call_replay(thread=thread, call=call, actor=actor).status == "ok"
    assert endpoint.requests[0]["auth"] is None


def test_without_an_endpoint_nothing_is_sent_or_kept(thread, call, actor, settings):
    settings.PLAYGROUND_BASE_URL = ""
    with pytest.raises(Conflict, match="No playground endpoint"):
        call_replay(thread=thread, call=call, actor=actor)
    assert not CallReplay.objects.exists() and not AuditLog.objects.filter(action="call.replay").exists()


def test_erasing_the_person_erases_their_replays_the_request_sent_and_the_audit_details(
        thread, call, actor, endpoint, workspace):
    replay = call_replay(thread=thread, call=call, actor=actor, edits={1: "Is alice's build red?"})
    receipt = user_erase(workspace=workspace, user_id="alice", actor=actor)
    assert receipt["counts"]["call_replays"] == 1 and not CallReplay.objects.exists()
    assert not StoredText.objects.filter(sha256=replay.request_hash).exists()
    assert AuditLog.objects.get(action="call.replay").details == {"erased": True}
