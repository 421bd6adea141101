"""A real ADK run (a scripted model calling a tool twice in parallel through ADK's Runner and
its function tools), saved by ContextStoreSessionService: each call is paired with its result in
the openai and anthropic renders, the text is shown, and ADK reads its events back as they were."""

import asyncio
from collections.abc import AsyncGenerator

from contextstore_client.adapters.adk import ContextStoreSessionService
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from framework_tests.counting import counting_client, fresh_namespace


def openai_call(call_id: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "weather", "arguments": arguments}}


class ScriptedModel(BaseLlm):
    """Calls weather for Paris and Oslo at once, then answers from the results."""

    model: str = "scripted-1"

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        answered = any(p.function_response for c in llm_request.contents for p in c.parts or ())
        if answered:
            parts = [types.Part(text="It is 18C, cloudy in Paris.")]
        else:
            parts = [types.Part(text="Let me look."),
                     types.Part(function_call=types.FunctionCall(id="call-1", name="weather",
                                                                 args={"city": "Paris"})),
                     types.Part(function_call=types.FunctionCall(id="call-2", name="weather",
                                                                 args={"city": "Oslo"}))]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def weather(city: str) -> str:
    """The weather in a city."""
    return f"18C, cloudy in {city}"


def test_an_adk_tool_call_reads_as_a_conversation():
    client, _ = counting_client()
    service = ContextStoreSessionService(client, namespace=fresh_namespace())
    agent = LlmAgent(name="helper", model=ScriptedModel(), instruction="Be brief.", tools=[weather])
    runner = Runner(agent=agent, app_name="shop", session_service=service)

    async def run() -> list:
        await service.create_session(app_name="shop", user_id="ann", session_id="adk-weather")
        message = types.Content(role="user", parts=[types.Part(text="Weather in Paris?")])
        run = runner.run_async(user_id="ann", session_id="adk-weather", new_message=message)
        return [e async for e in run]

    events = asyncio.run(run())
    stored = client.read_agent_session(service._app("shop"), "ann", "adk-weather")
    assert [(e["type"], e["content"]) for e in stored["events"]] == [
        ("Message", "Weather in Paris?"), ("ToolCall", "Let me look."),
        ("ToolResult", "18C, cloudy in Paris"), ("FunctionResponse", "18C, cloudy in Oslo"),
        ("LLMOutput", "It is 18C, cloudy in Paris.")]

    thread = client.get_thread(stored["thread"])
    assert thread.context(format="openai", record=False).messages == [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            openai_call("call-1", '{"city":"Paris"}'), openai_call("call-2", '{"city":"Oslo"}')]},
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

    # ADK reads back exactly the events it appended (the parallel responses one event), and
    # num_recent_events counts ADK events.
    async def read(config: GetSessionConfig | None = None) -> list:
        session = await service.get_session(app_name="shop", user_id="ann", session_id="adk-weather",
                                            config=config)
        return session.events

    whole = asyncio.run(read())
    assert [e.content.parts[0].text for e in whole[:1]] == ["Weather in Paris?"]
    assert [e.model_dump() for e in whole[1:]] == [e.model_dump() for e in events]
    recent = asyncio.run(read(GetSessionConfig(num_recent_events=2)))
    assert [e.id for e in recent] == [e.id for e in whole[-2:]]
    client.close()
