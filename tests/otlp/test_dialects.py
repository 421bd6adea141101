"""Golden cases, one OTLP/JSON export per dialect (tests/otlp/fixtures): each becomes the
session its ids name and one thread holding every message once, in conversation order, with
its LLM calls (usage, model, what each sent)."""

import pytest

from contextstore.models import Event, OtelSpan, Session
from contextstore.selectors.renders import llm_call_messages

from .conftest import attr, export, fixture, span

CASES = {
    "semconv_current": {
        "session": ("conv-semconv", "ann", "planner"),
        "events": [("Message", "system", "You plan trips."), ("Message", "user", "Plan Rome"),
                   ("LLMCallStart", "", ""), ("Reasoning", "assistant", ""),
                   ("ToolCall", "assistant", "Calling weather"), ("LLMComplete", "", ""),
                   ("ToolResult", "tool", "warm"), ("LLMCallStart", "", ""),
                   ("Message", "assistant", "Pack light."), ("LLMComplete", "", ""),
                   ("ToolCall", "assistant", "Calling book"),
                   ("Error", "system", "TimeoutError: booking API down")],
        "usage": [{"input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 80,
                   "cache_creation_tokens": 5, "model": "claude-sonnet-20260101",
                   "finish_reason": "tool_call", "provider": "anthropic"},
                  {"input_tokens": 130, "output_tokens": 4}],
        "sent": [2, 4],
    },
    "span_events": {
        "session": ("conv-events", "", "weather-agent"),
        "events": [("Message", "system", "Be terse."), ("Message", "user", "2+2?"),
                   ("LLMCallStart", "", ""), ("Message", "assistant", "4"), ("LLMComplete", "", "")],
        "usage": [{"input_tokens": 12, "output_tokens": 3, "model": "gpt-4", "finish_reason": "stop"}],
        "sent": [2],
    },
    "flattened": {
        "session": ("conv-flat", "bo", "weather-agent"),
        "events": [("Message", "user", "Weather in Oslo?"), ("LLMCallStart", "", ""),
                   ("ToolCall", "assistant", "Calling weather"), ("LLMComplete", "", ""),
                   ("ToolResult", "tool", "cold"), ("LLMCallStart", "", ""),
                   ("Message", "assistant", "Cold: wear a coat."), ("LLMComplete", "", "")],
        "usage": [{"input_tokens": 30, "output_tokens": 8, "model": "gpt-4o-2024-08-06",
                   "finish_reason": "tool_calls"}, {"input_tokens": 45, "output_tokens": 6}],
        "sent": [1, 3],
    },
    "openinference": {
        "session": ("lg-thread-7", "", "weather-agent"),
        "events": [("Message", "system", "You are kind."), ("Message", "user", "Hello!"),
                   ("LLMCallStart", "", ""), ("Message", "assistant", "Hi there."),
                   ("LLMComplete", "", "")],
        "usage": [{"input_tokens": 15, "output_tokens": 3, "cache_read_tokens": 10, "model": "gpt-4o-mini"}],
        "sent": [2],
    },
    "adk": {
        "session": ("adk-session-3", "cy", "helper"),
        "events": [("Message", "system", "Help briefly."), ("Message", "user", "Time in Tokyo?"),
                   ("LLMCallStart", "", ""), ("ToolCall", "assistant", "Calling clock"),
                   ("LLMComplete", "", ""), ("ToolResult", "tool", '{"time": "09:00"}'),
                   ("LLMCallStart", "", ""), ("Message", "assistant", "It is 09:00."),
                   ("LLMComplete", "", "")],
        "usage": [{"input_tokens": 20, "output_tokens": 5, "model": "gemini-2.5-flash",
                   "finish_reason": "stop"},
                  {"input_tokens": 40, "output_tokens": 6}],
        "sent": [2, 4],
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_dialect_becomes_one_thread_of_messages_once_and_its_calls(otlp, name):
    case = CASES[name]
    assert otlp(fixture(f"{name}.json")).status_code == 200
    session = Session.objects.get()
    assert (session.key, session.user_id, session.agent) == case["session"]
    events = list(Event.objects.filter(thread__session=session).order_by("seq"))
    assert [(e.type, e.role, e.content) for e in events] == case["events"]
    ends = [e for e in events if e.type == "LLMComplete"]
    for end, expected in zip(ends, case["usage"], strict=True):
        assert {k: end.data.get(k) for k in expected} == expected
        assert end.call_id and end.occurred_at is not None
    starts = [e for e in events if e.type == "LLMCallStart"]
    sent = [llm_call_messages(event=s, workspace_id=s.thread.workspace_id) for s in starts]
    assert [len(messages) for messages in sent] == case["sent"]
    assert all(s.call_id == end.call_id for s, end in zip(starts, ends, strict=True))


def test_what_a_call_sent_is_exactly_its_input_messages(otlp):
    assert otlp(fixture("semconv_current.json")).status_code == 200
    second = Event.objects.filter(type="LLMCallStart").order_by("seq")[1]
    assert llm_call_messages(event=second, workspace_id=second.thread.workspace_id) == [
        {"role": "system", "parts": [{"type": "text", "content": "You plan trips."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Plan Rome"}]},
        {"role": "assistant", "parts": [
            {"type": "reasoning", "content": "Need the weather first."},
            {"type": "tool_call", "id": "toolu_1", "name": "weather", "arguments": {"city": "Rome"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "toolu_1", "response": "warm"}]}]


def test_unmapped_attributes_are_kept_in_the_call_and_the_raw_span_stays(otlp):
    assert otlp(fixture("flattened.json")).status_code == 200
    start = Event.objects.filter(type="LLMCallStart").order_by("seq").first()
    assert start.data["attributes"] == {"traceloop.workflow.name": "oslo"}
    raw = OtelSpan.objects.get(span_id="00f067aa0ba902b7")
    assert raw.attributes["gen_ai.prompt.0.content"] == "Weather in Oslo?"
    assert raw.scope["name"] == "opentelemetry.instrumentation.openai.v1"


def test_agent_spans_are_runs(otlp):
    assert otlp(fixture("semconv_current.json")).status_code == 200
    runs = {e.run.run_id for e in Event.objects.select_related("run")}
    assert runs == {"b7ad6b7169203331"}


@pytest.mark.parametrize("result", ["Traceback (most recent call last):\nValueError: no city", "cold", None])
def test_a_failed_tool_span_is_one_error(otlp, result):
    """A tool span with status error is one failed event, whatever its result's text looks like:
    the ToolResult when the span has one (no Error beside it), else an Error."""
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather",
             "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.arguments": '{"city": "Oslo"}'}
    if result is not None:
        attrs["gen_ai.tool.call.result"] = result
    failed = span("00f067aa0ba902b7", "execute_tool weather", attrs, status={"code": 2, "message": "boom"},
                  events=[{"name": "exception", "timeUnixNano": "1760000001500000000",
                           "attributes": [attr("exception.type", "ValueError"),
                                          attr("exception.message", "no city")]}])
    assert otlp(export(failed)).status_code == 200
    errors = list(Event.objects.filter(is_error=True).values_list("type", flat=True))
    assert errors == (["ToolResult"] if result is not None else ["Error"])
    assert Session.objects.get().threads.get().error_count == 1
    if result is not None:
        assert Event.objects.get(type="ToolResult").data["error"] == "ValueError: no city"
