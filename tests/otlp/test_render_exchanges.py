"""An OTLP-derived thread renders every tool exchange whole: two parallel calls, a failed model
call (its Error event) logged between the results, and the answer all reach the model."""

import json

import pytest

from contextstore.models import Thread
from contextstore.selectors import rendering
from tests.provider_types import assert_anthropic_request, assert_openai_request

from .conftest import export, span

ASK = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris and Rome?"}]}
CALLS = {"role": "assistant", "parts": [
    {"type": "tool_call", "id": "call_p", "name": "get_weather", "arguments": {"city": "Paris"}},
    {"type": "tool_call", "id": "call_r", "name": "get_weather", "arguments": {"city": "Rome"}}]}
PARIS = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_p", "response": "18C"}]}
ROME = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_r", "response": "24C"}]}
ANSWER = {"role": "assistant", "parts": [{"type": "text", "content": "Paris 18C, Rome 24C."}]}


def chat(span_id: str, inputs: list, outputs: list, *, start: int, failed: bool = False) -> dict:
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
             "gen_ai.conversation.id": "conv-x", "gen_ai.input.messages": json.dumps(inputs)}
    if outputs:
        attrs["gen_ai.output.messages"] = json.dumps(outputs)
    extra = {}
    if failed:
        extra = {"status": {"code": 2, "message": "rate limited"},
                 "events": [{"timeUnixNano": str(1_760_000_000_000_000_000 + start * 10**9),
                             "name": "exception",
                             "attributes": [{"key": "exception.message",
                                             "value": {"stringValue": "rate limited once"}}]}]}
    return span(span_id, "chat gpt-4o", attrs, start=start, end=start + 1, **extra)


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_a_failed_call_between_the_results_keeps_the_exchange_and_the_answer(otlp, fmt):
    body = export(chat("00f067aa0ba90301", [ASK], [CALLS], start=1),
                  chat("00f067aa0ba90302", [ASK, CALLS, PARIS], [], start=3, failed=True),
                  chat("00f067aa0ba90303", [ASK, CALLS, PARIS, ROME], [ANSWER], start=5))
    assert otlp(body).status_code == 200
    thread = Thread.objects.get()
    out = rendering.context_render(thread=thread, max_tokens=8000, fmt=fmt)
    if fmt == "openai":
        assert_openai_request(out["messages"])
    else:
        assert_anthropic_request(out["system"], out["messages"])
    text = json.dumps(out["messages"])
    assert all(s in text for s in ("call_p", "call_r", "18C", "24C", "Paris 18C, Rome 24C."))
    assert not [s for s in out["stats"]["skipped"] if s["reason"] != "no_turn_start"], out["stats"]


def test_the_derived_thread_holds_the_error_between_the_results(otlp):
    body = export(chat("00f067aa0ba90301", [ASK], [CALLS], start=1),
                  chat("00f067aa0ba90302", [ASK, CALLS, PARIS], [], start=3, failed=True),
                  chat("00f067aa0ba90303", [ASK, CALLS, PARIS, ROME], [ANSWER], start=5))
    assert otlp(body).status_code == 200
    thread = Thread.objects.get()
    shown = [(e.type, e.role) for e in thread.events.filter(visible=True).order_by("position")]
    assert shown == [("Message", "user"), ("ToolCall", "assistant"), ("ToolCall", "assistant"),
                     ("ToolResult", "tool"), ("Error", "system"), ("ToolResult", "tool"),
                     ("Message", "assistant")]
