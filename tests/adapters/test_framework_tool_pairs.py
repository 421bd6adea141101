"""A conversation with a tool call, run by the real framework (AgentScope, Microsoft Agent
Framework) and saved by its adapter, reads as a conversation: the openai and anthropic renders
give each call as a tool call, paired with its result, and show the text around them, as do the
thread page and its search."""

import asyncio
import json

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
    tool,
)
from agentscope.agent import Agent as AgentScopeAgent
from agentscope.agent import InjectionConfig
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import TextBlock, ToolCallBlock, UserMsg
from agentscope.model import ChatModelBase
from agentscope.model._model_response import ChatResponse as AgentScopeResponse
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit
from contextstore_client.adapters.agent_framework import ContextStoreHistoryProvider
from contextstore_client.adapters.agentscope import ContextStoreStateStore
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from pydantic import BaseModel

from contextstore.models import Membership
from tests.provider_types import assert_anthropic_request, assert_openai_request


def openai_call(call_id: str, city: str) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": "weather", "arguments": f'{{"city": "{city}"}}'}}


# What every render of the conversation must read: the question, the two parallel calls each
# paired with its result, the answer.
OPENAI = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "Let me look.", "tool_calls": [
        openai_call("call-1", "Paris"), openai_call("call-2", "Oslo")]},
    {"role": "tool", "tool_call_id": "call-1", "content": "18C, cloudy in Paris"},
    {"role": "tool", "tool_call_id": "call-2", "content": "18C, cloudy in Oslo"},
    {"role": "assistant", "content": "It is 18C, cloudy in Paris."},
]
ANTHROPIC = [
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "call-1", "name": "weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "call-2", "name": "weather", "input": {"city": "Oslo"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call-1", "content": "18C, cloudy in Paris"},
        {"type": "tool_result", "tool_use_id": "call-2", "content": "18C, cloudy in Oslo"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "It is 18C, cloudy in Paris."}]},
]


def assert_reads_as_a_conversation(thread, workspace) -> None:
    """The thread's openai and anthropic renders are OPENAI and ANTHROPIC, requests the
    providers accept; its page shows the text, the calls and the results, and its search finds
    a result."""
    openai = thread.context(format="openai", record=False).messages
    assert openai == OPENAI
    assert_openai_request(openai)
    rendered = thread.context(format="anthropic", record=False)
    assert rendered.messages == ANTHROPIC
    assert_anthropic_request(rendered.system, rendered.messages)

    person = get_user_model().objects.create_user("lee", password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=person, role=Membership.Role.VIEWER)
    browser = Client()
    browser.force_login(person)
    url = reverse("contextstore:thread", args=[thread.id])
    page = browser.get(url).content.decode()
    for text in ("Weather in Paris?", "Let me look.", "weather(", "18C, cloudy in Paris",
                 "18C, cloudy in Oslo", "It is 18C, cloudy in Paris."):
        assert text in page, text
    found = browser.get(url, {"q": "cloudy in Oslo"}).content.decode()
    assert "18C, cloudy in Oslo" in found


# ---------------------------------------------------------------- AgentScope

class AgentScopeToolModel(ChatModelBase):
    """Calls weather for Paris and Oslo, then answers from the results."""

    class Parameters(BaseModel):
        pass

    def __init__(self) -> None:
        super().__init__(credential=None, model="scripted", parameters=self.Parameters(), stream=False)
        self.formatter = OpenAIChatFormatter()

    async def _call_api(self, model_name, messages, tools=None, tool_choice=None, **kwargs):
        answered = any(getattr(b, "type", None) == "tool_result" for m in messages
                       for b in (m.content if isinstance(m.content, list) else ()))
        if answered:
            return AgentScopeResponse(content=[TextBlock(text="It is 18C, cloudy in Paris.")], is_last=True)
        return AgentScopeResponse(content=[
            TextBlock(text="Let me look."),
            ToolCallBlock(id="call-1", name="weather", input='{"city": "Paris"}'),
            ToolCallBlock(id="call-2", name="weather", input='{"city": "Oslo"}')], is_last=True)


def agentscope_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city (str): the city
    """
    return f"18C, cloudy in {city}"


def test_an_agentscope_tool_call_is_paired_with_its_result_in_renders(store, workspace):
    states = ContextStoreStateStore(store)
    state = states.load("alice", "weather")
    tools = Toolkit(tools=[FunctionTool(agentscope_weather, name="weather", is_read_only=True,
                                        permission=PermissionDecision(PermissionBehavior.ALLOW, "test"))])
    agent = AgentScopeAgent(name="helper", system_prompt="Be brief.", model=AgentScopeToolModel(),
                            toolkit=tools, state=state,
                            # no time reminder (a hint block: test_agentscope_render.py has it)
                            injection_config=InjectionConfig(inject_runtime_state=False))
    asyncio.run(agent.reply(UserMsg("alice", "Weather in Paris?")))
    states.save(agent.state, "alice", "weather")

    thread = states.thread("alice", "weather")
    assert [(e.type, e.content) for e in thread.events()] == [
        ("Message", "Weather in Paris?"), ("ToolCall", "Let me look."),
        ("ToolResult", "18C, cloudy in Paris"), ("ToolResult", "18C, cloudy in Oslo"),
        ("LLMOutput", "It is 18C, cloudy in Paris.")]
    assert_reads_as_a_conversation(thread, workspace)

    # AgentScope gets its messages back as they were, the reply one message, and saving them
    # unchanged is no change.
    loaded = ContextStoreStateStore(store).load("alice", "weather")
    assert loaded.model_dump(mode="json")["context"] == agent.state.model_dump(mode="json")["context"]
    assert states.save(agent.state, "alice", "weather") == states.save(agent.state, "alice", "weather")


# ---------------------------------------------------------------- Microsoft Agent Framework

class FunctionCallingClient(FunctionInvocationLayer, BaseChatClient):
    """A chat client whose model calls weather for Paris and Oslo, then answers; the
    framework's own function invocation runs the tool."""

    async def _inner_get_response(self, *, messages, stream, options, **kwargs):
        if any(c.type == "function_result" for m in messages for c in m.contents):
            answer = "It is 18C, cloudy in Paris."
            return ChatResponse(messages=[Message(role="assistant", contents=[answer])])
        return ChatResponse(messages=[Message(role="assistant", contents=[
            Content.from_text("Let me look."),
            Content.from_function_call(call_id="call-1", name="weather", arguments='{"city": "Paris"}'),
            Content.from_function_call(call_id="call-2", name="weather", arguments='{"city": "Oslo"}')])])


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"18C, cloudy in {city}"


def test_an_agent_framework_tool_call_is_paired_with_its_result_in_renders(store, workspace):
    history = ContextStoreHistoryProvider(store, user_id="ann")
    agent = Agent(client=FunctionCallingClient(), instructions="Be brief.", tools=[weather],
                  context_providers=[history])
    session = agent.create_session(session_id="weather")
    answer = asyncio.run(agent.run("Weather in Paris?", session=session))
    assert answer.text.endswith("It is 18C, cloudy in Paris.")

    thread = history.threads("weather")
    assert [(e.type, e.content) for e in thread.events()] == [
        ("Message", "Weather in Paris?"), ("ToolCall", "Let me look."),
        ("ToolResult", "18C, cloudy in Paris"), ("ToolResult", "18C, cloudy in Oslo"),
        ("LLMOutput", "It is 18C, cloudy in Paris.")]
    assert_reads_as_a_conversation(thread, workspace)

    # The framework reads its messages back as they were: one tool message with both results.
    messages = asyncio.run(history.get_messages("weather"))
    assert [(str(m.role), [c.type for c in m.contents]) for m in messages] == [
        ("user", ["text"]), ("assistant", ["text", "function_call", "function_call"]),
        ("tool", ["function_result", "function_result"]), ("assistant", ["text"])]


# ---------------------------------------------------------------- OpenAI Agents items, offline

def test_an_openai_agents_call_keeps_its_arguments_once_and_comes_back_exactly():
    from contextstore_client.adapters.openai_agents import item_event, stored_item

    call = {"arguments": '{"city": "Paris"}', "call_id": "call-1", "name": "weather",
            "type": "function_call", "id": "fc1", "status": "completed"}
    output = {"call_id": "call-1", "output": [{"type": "input_text", "text": "18C"}],
              "type": "function_call_output"}
    made = [item_event(call), item_event(output)]

    assert made[0]["data"]["tool_calls"] == [{"id": "call-1", "name": "weather",
                                              "arguments": '{"city": "Paris"}'}]
    assert made[0]["data"]["item"]["arguments"] is None and made[0]["content"] == ""
    assert made[1]["data"]["tool_call_id"] == "call-1"
    # What the server stores is JSON: the items come back with their keys in order.
    for item, event in zip([call, output], made, strict=True):
        back = stored_item(json.loads(json.dumps(event)))
        assert json.dumps(back) == json.dumps(item)
