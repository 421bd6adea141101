"""A real MCP host: an OpenAI Agents SDK agent starts contextstore-mcp with MCPServerStdio and
its scripted model (the SDK's own ScriptedModel) calls recall, append_events and get_context;
the thread then holds what the agent appended."""

import json

import pytest
from agents import Agent, RunConfig, Runner
from agents.mcp import MCPServerStdio
from agents.testing import ScriptedModel, assistant_message, function_call

from contextstore.models import Event
from contextstore.services.memories import memory_remember
from tests.mcp.conftest import SERVER, in_db

pytestmark = pytest.mark.anyio


def outputs(call) -> dict[str, str]:
    """The tool results the model was given, by call id."""
    return {item["call_id"]: item["output"] for item in call.input
            if isinstance(item, dict) and item.get("type") == "function_call_output"}


async def test_an_agents_sdk_agent_reads_and_writes_its_own_thread(mcp_env, thread, workspace, actor):
    await in_db(memory_remember, workspace=workspace, user_id="alice", content="Alice travels by train",
                actor=actor)
    model = ScriptedModel([
        [function_call("recall", {"q": "travels"}, call_id="c1")],
        [function_call("append_events", {"events": [
            {"type": "Message", "role": "user", "content": "Book my trip to Lisbon"},
            {"type": "Message", "role": "assistant", "content": "Booking the train to Lisbon."},
        ]}, call_id="c2")],
        [function_call("get_context", {"format": "openai"}, call_id="c3")],
        [assistant_message("Booked: the train to Lisbon.")],
    ])
    params = {"command": SERVER[0], "args": [*SERVER[1:], "--session-key", "s-1", "--user-id", "alice"],
              "env": mcp_env}
    async with MCPServerStdio(params=params, name="contextstore", client_session_timeout_seconds=30,
                              use_structured_content=True) as server:
        agent = Agent(name="planner", instructions="Plan trips.", model=model, mcp_servers=[server])
        result = await Runner.run(agent, "Book my trip to Lisbon",
                                  run_config=RunConfig(tracing_disabled=True))

    assert result.final_output == "Booked: the train to Lisbon."
    model.assert_complete()
    offered = {tool.name for tool in model.first_call.tools}
    assert {"recall", "append_events", "get_context", "set_block", "collapse"} <= offered
    seen = outputs(model.last_call)
    assert [m["content"] for m in json.loads(seen["c1"])["memories"]] == ["Alice travels by train"]
    assert [e["seq"] for e in json.loads(seen["c2"])["events"]] == [1, 2]
    assert [m["content"] for m in json.loads(seen["c3"])["messages"]] == [
        "Book my trip to Lisbon", "Booking the train to Lisbon."]
    events = await in_db(lambda: list(
        Event.objects.filter(thread=thread).order_by("seq").values_list("role", "content")))
    assert events == [("user", "Book my trip to Lisbon"), ("assistant", "Booking the train to Lisbon.")]
