"""A tool's failure, as the adapters store it, is an error by toolcalls.event_failed: the rule
reads what each framework actually writes (not a shape made up for the rule's own tests)."""

import pytest
from agent_framework import Content, Message
from contextstore_client.adapters import agent_framework, openai_agents

from contextstore.toolcalls import event_failed


def failed(event: dict) -> bool:
    return event_failed(event["type"], event["role"], event.get("content", ""), event.get("parts"),
                        event.get("data"))


@pytest.mark.parametrize("exception, expected", [("FunctionInvocationError", True), (None, False)])
def test_an_agent_framework_function_result_fails_with_its_exception(exception, expected):
    message = Message(role="tool", contents=[
        Content.from_function_result(call_id="c1", result="weather: 12°C", exception=exception)])
    assert failed(agent_framework._event(message)) is expected


@pytest.mark.parametrize("output, expected", [
    ("An error occurred while running the tool. Please try again. Error: timeout", True),
    ("12°C and sunny", False),
])
def test_an_openai_agents_function_output_fails_by_its_text(output, expected):
    event = openai_agents.item_event({"type": "function_call_output", "call_id": "c1", "output": output})
    assert event["type"] == "ToolResult" and failed(event) is expected
