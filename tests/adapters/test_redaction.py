"""Secrets an agent holds are stored redacted whichever adapter saves them: a clientai step
result (its input and results calls), an AgentScope Msg, and a framework session commit through the light
client (what the ADK, LangGraph and OpenAI Agents adapters send). Checked by SQL over every row."""

from agentscope.message import UserMsg
from contextstore_client.adapters.agentscope import ContextStoreStateStore
from contextstore_client.adapters.clientai import ContextStoreAgentContext

from contextstore.models import Event
from tests.adapters.test_clientai import frozen_clock  # noqa: F401 - a fixture both sides stamp with
from tests.redaction_corpus import rows_holding

OPENAI = "sk-proj-" + "Zx9_Qw8-Er7Ty6Ui5" * 3
AWS = "AKIA" + "Z7Q4RM2K9XW3PL5N"


def test_a_clientai_step_result_holding_a_key_is_stored_redacted(store, frozen_clock):  # noqa: F811
    context = ContextStoreAgentContext.load(store.thread("keys-clientai", user_id="ann"))
    context.set_input(f"deploy with {OPENAI}")
    context.set_step_result("shell", f"export AWS_ACCESS_KEY_ID={AWS}")
    context.set_input("next")  # the turn before goes into the history, with its results
    context.save()
    assert rows_holding(OPENAI) == [] and rows_holding(AWS) == []
    loaded = ContextStoreAgentContext.load(store.thread("keys-clientai", user_id="ann"))
    assert loaded.conversation_history[0]["input"] == "deploy with [REDACTED:openai_key]"
    assert loaded.conversation_history[0]["results"]["shell"] == (
        "export AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key_id]")


def test_an_agentscope_msg_holding_a_key_is_stored_redacted(store):
    states = ContextStoreStateStore(store)
    state = states.load("ann", "keys-agentscope")
    state.context.append(UserMsg("ann", f"my key is {OPENAI}"))
    states.save(state, "ann", "keys-agentscope")
    assert rows_holding(OPENAI) == []
    loaded = ContextStoreStateStore(store).load("ann", "keys-agentscope")
    assert loaded.context[0].get_text_content() == "my key is [REDACTED:openai_key]"


def test_a_framework_session_commit_through_the_client_is_stored_redacted(store):
    store.create_agent_session("shop", "ann", "s1", state={"aws": AWS})
    store.commit_agent_session("shop", "ann", "s1", events=[
        {"type": "Message", "content": f"use {OPENAI}", "client_id": "e1"},
        {"type": "ToolCall", "data": {"id": "c1", "name": "login", "arguments": {"key": AWS}}}],
        state={"k": OPENAI}, user_state={"k": AWS})
    assert rows_holding(OPENAI) == [] and rows_holding(AWS) == []
    read = store.read_agent_session("shop", "ann", "s1")
    assert read["state"] == {"aws": "[REDACTED:aws_access_key_id]", "k": "[REDACTED:openai_key]"}
    assert Event.objects.get(client_id="e1").data == {"redacted": {"openai_key": 1}}
