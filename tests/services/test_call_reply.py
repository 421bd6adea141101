"""What a call answered (selectors/calls.py llm_call_reply), however the agent logged it."""

import pytest

from contextstore.selectors.calls import llm_call_at, llm_call_reply
from contextstore.services.events import event_append

START = {"type": "LLMCallStart", "data": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}}
END = {"type": "LLMComplete", "data": {"model": "m", "output_tokens": 3}}
WEATHER = {"type": "tool_call", "id": "t1", "name": "weather", "arguments": {"city": "Rome"}}


def reply_at(thread, seq: int):
    return llm_call_reply(thread=thread, call=llm_call_at(thread=thread, seq=seq))


def test_an_llm_output_after_the_complete_is_the_reply(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        START, END, {"type": "LLMOutput", "role": "assistant", "content": "hello"},
        {"type": "Message", "role": "user", "content": "and then?"},
        {"type": "LLMOutput", "role": "assistant", "content": "not this call's"}])
    reply = reply_at(thread, 1)
    assert [e.seq for e in reply.events] == [3]
    assert reply.as_message() == {"role": "assistant", "content": "hello"}


def test_an_assistant_message_between_start_and_complete_is_the_reply(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        START, {"type": "Reasoning", "role": "assistant", "content": "thinking"},
        {"type": "Message", "role": "assistant", "content": "hello there"}, END,
        {"type": "ToolResult", "role": "tool", "content": "x"},
        {"type": "Message", "role": "assistant", "content": "a later message"}])
    reply = reply_at(thread, 4)  # the same call, named by its LLMComplete
    assert [e.type for e in reply.events] == ["Reasoning", "Message"]
    assert reply.as_message() == {"role": "assistant", "content": "hello there"}


def test_a_reply_of_tool_calls_alone_is_those_calls(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        START, END,
        {"type": "ToolCall", "role": "assistant", "content": "Calling weather", "parts": [WEATHER]},
        {"type": "ToolResult", "role": "tool", "content": "warm", "data": {"tool_call_id": "t1"}},
        START, END, {"type": "LLMOutput", "role": "assistant", "content": "It is warm."}])
    assert reply_at(thread, 1).as_message() == {
        "role": "assistant", "content": "",
        "tool_calls": [{"id": "t1", "name": "weather", "arguments": {"city": "Rome"}}]}
    assert reply_at(thread, 5).as_message() == {"role": "assistant", "content": "It is warm."}


def test_an_llm_complete_that_carries_the_reply_is_the_reply_before_any_later_message(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        START, {"type": "LLMComplete", "role": "assistant", "content": "from the complete",
                "data": {"model": "m", "tool_calls": [{"id": "t2", "type": "function", "function": {
                    "name": "ls", "arguments": '{"path": "."}'}}]}},
        {"type": "Message", "role": "assistant", "content": "what the agent said next"}])
    reply = reply_at(thread, 1)
    assert reply.events == [] and reply.as_message() == {
        "role": "assistant", "content": "from the complete",
        "tool_calls": [{"id": "t2", "name": "ls", "arguments": '{"path": "."}'}]}


def test_a_call_that_logged_no_reply_has_none_and_takes_no_other_call_s(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        START, END, {"type": "Message", "role": "user", "content": "hello?"},
        {"type": "LLMOutput", "role": "assistant", "content": "someone else's"}])
    reply = reply_at(thread, 1)
    assert reply.events == [] and reply.as_message() is None


def test_outputs_naming_another_call_or_run_are_not_this_call_s_reply(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {**START, "call_id": "a", "run_id": "r1"},
        {"type": "LLMOutput", "role": "assistant", "content": "call b's", "call_id": "b", "run_id": "r1"},
        {"type": "LLMOutput", "role": "assistant", "content": "run 2's", "run_id": "r2"},
        {"type": "LLMOutput", "role": "assistant", "content": "mine", "call_id": "a", "run_id": "r1"},
        {**END, "call_id": "a", "run_id": "r1"}])
    assert reply_at(thread, 1).as_message() == {"role": "assistant", "content": "mine"}


@pytest.mark.parametrize("output", [
    # Anthropic's content blocks, with thinking before the text
    {"type": "LLMOutput", "parts": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
                                    {"type": "text", "text": "hello"}]},
    # OpenAI Responses' message item
    {"type": "Message", "role": "assistant", "parts": [{"type": "output_text", "text": "hello"}]},
    # the text in both places, as many frameworks keep it: once
    {"type": "LLMOutput", "content": "hello", "parts": [{"type": "text", "text": "hello"}]},
])
def test_a_reply_whose_text_is_in_its_parts_is_that_text(thread, actor, output):
    """A reply logged with its text only in content parts was once no reply at all (None)."""
    event_append(thread=thread, actor=actor, events=[START, END, output])
    assert reply_at(thread, 1).as_message() == {"role": "assistant", "content": "hello"}


def test_an_llm_complete_carrying_its_reply_in_parts_is_the_reply(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        START, {**END, "parts": [{"type": "text", "text": "from the complete"}]},
        {"type": "LLMOutput", "content": "a later output"}])
    reply = reply_at(thread, 1)
    assert reply.events == [] and reply.as_message() == {"role": "assistant", "content": "from the complete"}
