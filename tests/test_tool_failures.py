"""toolcalls.event_failed: the one rule that makes an event an error, for every ingest path."""

import json

import pytest

from contextstore.toolcalls import event_failed


def failed(content: str = "", parts=None, data=None, type_: str = "ToolResult", role: str = "tool") -> bool:
    return event_failed(type_, role, content, parts, data)


def test_an_error_event_is_an_error_whatever_it_holds():
    assert event_failed("Error", "system", "", None, None)


@pytest.mark.parametrize("data", [
    {"is_error": True},  # Anthropic
    {"isError": True, "content": [{"type": "text", "text": "boom"}]},  # MCP
    {"status": "error"},  # LangChain ToolMessage
    {"status": "FAILED"},
    {"error": "quota exceeded"},  # ADK's function response
    {"tool_call_id": "t1", "result": {"isError": True}},  # an MCP result kept under data.result
    {"item": {"status": "failure"}},
])
def test_a_flagged_tool_result_fails(data):
    assert failed("fine looking text", data=data)


def test_an_anthropic_tool_result_part_with_is_error_fails():
    parts = [{"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "nope"}]
    assert failed("", parts=parts)
    assert not failed("", parts=[{**parts[0], "is_error": False}])


def test_a_framework_copy_of_the_message_is_read_for_its_results():
    """The adapters keep the framework's own message in data: Agent Framework's function_result
    with an exception, ADK's function_response with an error status, peteos' tool_result."""
    agent_framework = {"agent_framework": {"type": "message", "role": "tool", "contents": [
        {"type": "function_result", "call_id": "c1", "exception": "FunctionInvocationError",
         "result": "boom"}]}}
    assert failed("", data=agent_framework)
    adk = {"adk": {"content": {"parts": [{"function_response": {
        "id": "c1", "name": "weather", "response": {"status": "error", "error_message": "no city"}}}]}}}
    assert failed("weather: {'status': 'error'}", data=adk)
    peteos = {"peteos": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "Traceback (most recent call last):"}]}}
    assert failed("", data=peteos)
    fine = {"agent_framework": {"contents": [{"type": "function_result", "result": "ok"}]},
            "adk": {"content": {"parts": [{"function_response": {"response": {"status": "success"}}}]}}}
    assert not failed("", data=fine)


def test_the_walk_into_data_is_bounded():
    deep: dict = {"type": "function_result", "exception": "x"}
    for _ in range(10):
        deep = {"wrap": deep}
    assert not failed("", data=deep)


def test_a_result_part_whose_text_is_an_error_fails():
    assert failed("", parts=[{"type": "tool_result", "tool_use_id": "t1", "content": "Error: denied"}])


@pytest.mark.parametrize("content", [
    "Traceback (most recent call last):\n  File \"x.py\", line 1\nZeroDivisionError: division by zero",
    "Error: ENOENT: no such file or directory",
    "  FileNotFoundError: [Errno 2] No such file or directory: 'x'",
    "error: pathspec 'nope' did not match any file(s) known to git",
    "requests.exceptions.ConnectionError: refused",
    "Error executing tool fetch: timeout",
    "An error occurred while running the tool. Please try again. Error: boom",  # OpenAI Agents SDK
    json.dumps({"isError": True, "content": []}),  # an MCP result as text
    json.dumps({"status": "error", "message": "bad request"}),
])
def test_a_tool_result_with_a_known_failure_shape_fails(content):
    assert failed(content)


@pytest.mark.parametrize("content, data", [
    ("3 passed in 0.12s", None),
    ("no errors found: 0 Error lines", None),  # mentions errors, does not open with one
    ("The file has an Error: heading", None),
    ("ok", {"is_error": False, "status": "success", "error": None}),
    ("ok", {"error": ""}),
    (json.dumps({"status": "ok", "rows": []}), None),
    ("{not json", None),
])
def test_a_successful_tool_result_does_not_fail(content, data):
    assert not failed(content, data=data)


def test_only_errors_and_tool_results_can_fail():
    """An LLM call's failure is its own Error event (counted once); a message quoting an error
    is prose, not a failure."""
    assert not failed("Error: rate limited", data={"error": "429"}, type_="LLMComplete", role="")
    assert not failed("Error: you typed it wrong", type_="Message", role="user")
    # A framework's own type for a tool's answer still counts by its role.
    assert failed("Error: nope", type_="FunctionResponse", role="tool")
    assert failed("ok", data={"is_error": True}, type_="ToolResult", role="")


def test_a_huge_json_text_is_not_parsed():
    text = json.dumps({"isError": True, "pad": "x" * 70_000})
    assert not failed(text)
