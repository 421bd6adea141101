"""A real OpenAI Agents SDK run (a scripted model calling a function tool twice in parallel
through the SDK's Runner), kept by ContextStoreSession: each call is paired with its result in
the openai and anthropic renders, the text is shown, and get_items gives back exactly the items
the SDK added."""

import json

from agents import Agent, ModelResponse, Runner, Usage, function_tool
from agents.models.interface import Model
from contextstore_client.adapters.openai_agents import ContextStoreSession
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from framework_tests.counting import counting_client, fresh_namespace


def openai_call(call_id: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "weather", "arguments": arguments}}


def text(value: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed", content=[
        ResponseOutputText(type="output_text", text=value, annotations=[])])


class ScriptedModel(Model):
    """Calls weather for Paris and Oslo at once, then answers from the results."""

    async def get_response(self, system_instructions, input, *args, **kwargs) -> ModelResponse:
        answered = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in input)
        if answered:
            output = [text("It is 18C, cloudy in Paris.")]
        else:
            output = [text("Let me look."),
                      ResponseFunctionToolCall(id="fc1", call_id="call-1", type="function_call",
                                               name="weather", arguments='{"city": "Paris"}'),
                      ResponseFunctionToolCall(id="fc2", call_id="call-2", type="function_call",
                                               name="weather", arguments='{"city": "Oslo"}')]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"18C, cloudy in {city}"


async def test_an_openai_agents_tool_call_reads_as_a_conversation():
    client, _ = counting_client()
    session = ContextStoreSession("agents-weather", client, namespace=fresh_namespace())
    agent = Agent(name="helper", instructions="Be brief.", model=ScriptedModel(), tools=[weather])
    result = await Runner.run(agent, "Weather in Paris?", session=session)
    assert result.final_output == "It is 18C, cloudy in Paris."

    stored = client.read_agent_session(session.app, "", "agents-weather")
    assert [(e["type"], e["content"]) for e in stored["events"]] == [
        ("Message", "Weather in Paris?"), ("LLMOutput", "Let me look."), ("ToolCall", ""), ("ToolCall", ""),
        ("ToolResult", "18C, cloudy in Paris"), ("ToolResult", "18C, cloudy in Oslo"),
        ("LLMOutput", "It is 18C, cloudy in Paris.")]

    thread = client.get_thread(stored["thread"])
    assert thread.context(format="openai", record=False).messages == [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Let me look."},
        {"role": "assistant", "content": None, "tool_calls": [
            openai_call("call-1", '{"city": "Paris"}'), openai_call("call-2", '{"city": "Oslo"}')]},
        {"role": "tool", "tool_call_id": "call-1", "content": "18C, cloudy in Paris"},
        {"role": "tool", "tool_call_id": "call-2", "content": "18C, cloudy in Oslo"},
        {"role": "assistant", "content": "It is 18C, cloudy in Paris."},
    ]
    assert thread.context(format="anthropic", record=False).messages == [
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

    # The SDK gets back exactly the items it added, in order, byte for byte.
    added = [{"content": "Weather in Paris?", "role": "user"}] + [
        item.to_input_item() for item in result.new_items]
    assert json.dumps(await session.get_items()) == json.dumps(added)
    client.close()
