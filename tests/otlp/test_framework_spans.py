"""The shapes the frameworks' own tracing was seen to send (tests/frameworks/test_otlp_emitters.py
runs the real ones), in the fast tier: ADK's legacy call_llm holding a generate_content of the
same call, its tool spans with an empty llm_request, user.id on log records alone; OpenInference
tool spans that name no call id. Then the system prompt stored once whichever form carries it,
the session ids in the issue's order, and calls priced from the list-price table."""

import json
from decimal import Decimal

import pytest

from contextstore.llm_models import call_cost
from contextstore.models import Event, Session
from contextstore.otel.mapping import session_hint

from .conftest import TRACE, attr, export, span

ROOT = "b7ad6b7169203331"
HI = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}])


def shape(**filters) -> list[tuple[str, str, str]]:
    return [(e.type, e.role, e.content) for e in Event.objects.filter(**filters).order_by("seq")]


def adk_call(span_id: str, contents: list, reply: dict, tokens: tuple[int, int], start: int) -> list[dict]:
    """ADK's legacy call: call_llm (the request and response as JSON, the session id, itself as
    gen_ai.system) and, inside it, generate_content (the provider and usage, no content)."""
    request = {"model": "gemini-2.5-flash", "config": {"system_instruction": "Be brief."},
               "contents": contents}
    usage = {"gen_ai.usage.input_tokens": tokens[0], "gen_ai.usage.output_tokens": tokens[1]}
    outer = span(span_id, "call_llm", {
        "gen_ai.system": "gcp.vertex.agent", "gen_ai.request.model": "gemini-2.5-flash",
        "gcp.vertex.agent.session_id": "adk-7", "gcp.vertex.agent.llm_request": json.dumps(request),
        "gcp.vertex.agent.llm_response": json.dumps({"content": reply, "finish_reason": "STOP"}),
        **usage}, parent=ROOT, start=start, end=start + 2)
    inner = span(span_id[:-1] + "9", "generate_content gemini-2.5-flash", {
        "gen_ai.operation.name": "generate_content", "gen_ai.system": "gemini",
        "gen_ai.request.model": "gemini-2.5-flash", **usage}, parent=span_id, start=start, end=start + 1)
    return [outer, inner]


USER = {"role": "user", "parts": [{"text": "Weather in Oslo?"}]}
CALL = {"role": "model", "parts": [{"function_call": {"id": "adk-1", "name": "weather",
                                                      "args": {"city": "Oslo"}}}]}
RESULT = {"role": "user", "parts": [{"function_response": {"id": "adk-1", "name": "weather",
                                                           "response": {"sky": "grey"}}}]}


def test_adk_legacy_spans_are_one_call_each_and_its_tool_span_no_call(otlp):
    tool = span("7777777777777777", "execute_tool weather", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather",
        "gen_ai.tool.call.id": "adk-1", "gcp.vertex.agent.llm_request": "{}",
        "gcp.vertex.agent.llm_response": "{}", "gcp.vertex.agent.tool_call_args": '{"city": "Oslo"}',
        "gcp.vertex.agent.tool_response": '{"sky": "grey"}'}, parent=ROOT, start=4, end=5)
    spans = [span(ROOT, "invoke_agent helper", {"gen_ai.operation.name": "invoke_agent"}, end=9),
             *adk_call("1000000000000001", [USER], CALL, (20, 5), 1), tool,
             *adk_call("2000000000000002", [USER, CALL, RESULT],
                       {"role": "model", "parts": [{"text": "Grey."}]}, (40, 2), 6)]
    assert otlp(export(*spans, scope="gcp.vertex.agent")).status_code == 200
    assert Session.objects.get().key == "adk-7"  # named by call_llm, below the root
    assert shape() == [
        ("Message", "system", "Be brief."), ("Message", "user", "Weather in Oslo?"),
        ("LLMCallStart", "", ""), ("ToolCall", "assistant", "Calling weather"), ("LLMComplete", "", ""),
        ("ToolResult", "tool", '{"sky": "grey"}'), ("LLMCallStart", "", ""),
        ("Message", "assistant", "Grey."), ("LLMComplete", "", "")]
    ends = Event.objects.filter(type="LLMComplete").order_by("seq")
    assert [e.call_id for e in ends] == ["1000000000000001", "2000000000000002"]
    assert [(e.data["provider"], e.data["input_tokens"]) for e in ends] == [("gemini", 20), ("gemini", 40)]
    assert Event.objects.get(type="ToolCall").parts[0]["arguments"] == {"city": "Oslo"}


def test_a_user_id_only_on_log_records_names_the_sessions_user(otlp):
    call = span("00f067aa0ba902b7", "generate_content gemini-2.5-flash", {
        "gen_ai.operation.name": "generate_content", "gen_ai.conversation.id": "adk-8",
        "gen_ai.input.messages": HI})
    record = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{
        "timeUnixNano": "1760000001000000000", "traceId": TRACE, "spanId": "00f067aa0ba902b7",
        "eventName": "gen_ai.client.inference.operation.details",
        "attributes": [attr("user.id", "ann")]}]}]}]}
    assert otlp(export(call)).status_code == 200
    assert otlp(record, signal="logs").status_code == 200
    session = Session.objects.get()
    assert (session.key, session.user_id) == ("adk-8", "ann")
    assert shape(thread__session=session) == [("Message", "user", "Hi"), ("LLMCallStart", "", ""),
                                              ("LLMComplete", "", "")]


def test_adk_content_events_with_their_content_elided_are_no_messages(otlp):
    """ADK's legacy schema with content capture off: a generate_content span whose log records
    say `<elided>`; the call keeps its usage and finish reason, no message is made up."""
    call = span("00f067aa0ba902b7", "generate_content gemini-2.5-flash", {
        "gen_ai.operation.name": "generate_content", "gen_ai.system": "gemini",
        "gen_ai.request.model": "gemini-2.5-flash", "gen_ai.usage.input_tokens": 42})

    def record(name: str, **body: str) -> dict:
        return {"timeUnixNano": "1760000001000000000", "traceId": TRACE, "spanId": "00f067aa0ba902b7",
                "eventName": name, "body": {"kvlistValue": {"values": [attr(k, v) for k, v in body.items()]}}}

    records = [record("gen_ai.system.message", content="<elided>"),
               record("gen_ai.user.message", content="<elided>"),
               record("gen_ai.choice", content="<elided>", finish_reason="STOP")]
    logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}
    assert otlp(logs, signal="logs").status_code == 200
    assert otlp(export(call)).status_code == 200
    assert shape() == [("LLMCallStart", "", ""), ("LLMComplete", "", "")]
    done = Event.objects.get(type="LLMComplete")
    assert (done.data["input_tokens"], done.data["finish_reason"]) == (42, "STOP")


def oi_llm(span_id: str, inputs: list[dict], outputs: list[dict], start: int) -> dict:
    attrs = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini", "session.id": "oi-1"}
    for prefix, messages in (("llm.input_messages", inputs), ("llm.output_messages", outputs)):
        for i, message in enumerate(messages):
            for key, value in message.items():
                attrs[f"{prefix}.{i}.message.{key}"] = value
    return span(span_id, "generation", attrs, parent=ROOT, start=start, end=start + 1)


def oi_call(call_id: str, city: str) -> dict:
    return {"tool_calls.0.tool_call.id": call_id, "tool_calls.0.tool_call.function.name": "weather",
            "tool_calls.0.tool_call.function.arguments": json.dumps({"city": city})}


def test_openinference_tool_spans_without_a_call_id_are_the_calls_they_ran(otlp):
    """Two calls of one tool, told apart by their arguments; `tool.parameters` is the schema."""
    question = {"role": "user", "content": "Oslo and Rome?"}
    asked = [{"role": "assistant", **oi_call("call_a", "Oslo")},
             {"role": "assistant", **oi_call("call_b", "Rome")}]

    def tool(span_id: str, city: str, sky: str, start: int) -> dict:
        return span(span_id, "weather", {
            "openinference.span.kind": "TOOL", "tool.name": "weather",
            "input.value": json.dumps({"city": city}), "output.value": sky,
            "tool.parameters": '{"type": "object"}'}, parent=ROOT, start=start, end=start + 1)

    spans = [span(ROOT, "weather", {"openinference.span.kind": "AGENT"}, end=9),
             oi_llm("1000000000000001", [question], asked, 1),
             tool("3000000000000003", "Rome", "sunny", 3), tool("4000000000000004", "Oslo", "grey", 4),
             oi_llm("2000000000000002", [question, *asked,
                                         {"role": "tool", "tool_call_id": "call_a", "content": "grey"},
                                         {"role": "tool", "tool_call_id": "call_b", "content": "sunny"}],
                    [{"role": "assistant", "content": "Grey and sunny."}], 6)]
    assert otlp(export(*spans)).status_code == 200
    calls = Event.objects.filter(type="ToolCall").order_by("seq")
    assert [(c.call_id, c.parts[0]["arguments"]) for c in calls] == [
        ("call_a", {"city": "Oslo"}), ("call_b", {"city": "Rome"})]
    results = Event.objects.filter(type="ToolResult").order_by("seq")
    assert [(r.call_id, r.content) for r in results] == [("call_b", "sunny"), ("call_a", "grey")]
    assert Event.objects.filter(type="LLMComplete").count() == 2


def semconv(system: list[dict], answer: str) -> dict:
    return {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
            "gen_ai.input.messages": json.dumps(system + [{"role": "user", "parts": [
                {"type": "text", "content": "Hi"}]}]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                {"type": "text", "content": answer}]}])}


SYSTEM_FORMS = {
    "gen_ai.system_instructions": lambda answer: {**semconv([], answer), "gen_ai.system_instructions":
                                                  json.dumps([{"type": "text", "content": "Be brief."}])},
    "a system-role input message": lambda answer: semconv(
        [{"role": "system", "parts": [{"type": "text", "content": "Be brief."}]}], answer),
    "ADK's config.system_instruction": lambda answer: {
        "gcp.vertex.agent.llm_request": json.dumps({
            "config": {"system_instruction": "Be brief."},
            "contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}),
        "gcp.vertex.agent.llm_response": json.dumps({
            "content": {"role": "model", "parts": [{"text": answer}]}})},
}


@pytest.mark.parametrize("form", sorted(SYSTEM_FORMS))
def test_the_system_prompt_is_stored_once_as_the_threads_first_event(otlp, form):
    calls = [span(f"{n + 1}000000000000000", "chat gpt-4o", SYSTEM_FORMS[form](answer), start=2 * n + 1,
                  end=2 * n + 2) for n, answer in enumerate(("Hello.", "Hello again."))]
    assert otlp(export(*calls)).status_code == 200
    assert shape() == [("Message", "system", "Be brief."), ("Message", "user", "Hi"),
                       ("LLMCallStart", "", ""), ("Message", "assistant", "Hello."),
                       ("LLMComplete", "", ""), ("LLMCallStart", "", ""),
                       ("Message", "assistant", "Hello again."), ("LLMComplete", "", "")]


# The issue's order, best first, one example of each id a level names.
RANKED = [("contextstore.session.id", "a"), ("gen_ai.conversation.id", "b"), ("session.id", "c"),
          ("langfuse.session.id", "d"), ("gcp.vertex.agent.session_id", "e"),
          ("metadata", json.dumps({"thread_id": "f"})), ("openai.agents.group_id", "g")]


def test_session_ids_rank_in_the_issues_order_and_the_trace_id_comes_last():
    alone = [session_hint({key: value}) for key, value in RANKED]
    assert alone == [(0, "a"), (1, "b"), (2, "c"), (2, "d"), (3, "e"), (3, "f"), (3, "g")]
    for i in range(len(RANKED)):
        assert session_hint(dict(RANKED[i:])) == alone[i]  # over every id ranked below it
    assert session_hint({"metadata": json.dumps({"group_id": "g"}), "group_id": "h"}) == (3, "g")
    assert session_hint({"gen_ai.agent.name": "x", "user.id": "y"}) is None  # the trace id's


def priced(model: str, usage: dict[str, int]) -> dict:
    return span("00f067aa0ba902b7", "chat", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": model, **usage, "gen_ai.input.messages": HI})


def test_a_listed_model_is_priced_and_an_unknown_one_gets_no_cost(otlp):
    usage = {"gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 200,
             "gen_ai.usage.cache_read.input_tokens": 400}
    assert otlp(export(priced("gpt-4o-2024-08-06", usage))).status_code == 200
    done = Event.objects.get(type="LLMComplete")
    # 600 fresh and 400 cached (half price) input tokens at 2.50, 200 output at 10.00 per million
    assert Decimal(str(done.data["cost"])) == Decimal("0.004") and done.data["cost_source"] == "list price"
    assert Session.objects.get().cost_total == Decimal("0.004")
    trace = "d" * 32
    unknown = priced("house-model-1", usage) | {"traceId": trace}
    assert otlp(export(unknown)).status_code == 200
    done = Event.objects.get(type="LLMComplete", thread__session__key=trace)
    assert "cost" not in done.data and done.data["input_tokens"] == 1000
    reported = priced("gpt-4o", {**usage, "gen_ai.usage.cost": 0.5}) | {"traceId": "e" * 32}
    assert otlp(export(reported)).status_code == 200
    done = Event.objects.get(type="LLMComplete", thread__session__key="e" * 32)
    assert done.data["cost"] == 0.5 and "cost_source" not in done.data


def test_call_cost_is_none_when_unknown_not_zero():
    million = 1_000_000
    assert call_cost("claude-sonnet-4-20250514", {"input_tokens": million, "output_tokens": 0}) == 3
    assert call_cost("gemini-2.5-flash-lite", {"output_tokens": 1_000_000}) == Decimal("0.4")
    assert call_cost("gemini-2.5-flash", {"output_tokens": 1_000_000}) == Decimal("2.5")
    assert call_cost("gpt-4o-mini", {"input_tokens": 0, "output_tokens": 0}) == 0
    assert call_cost("gpt-4o-mini", {}) is None  # no token counts: unknown
    assert call_cost("my-finetune", {"input_tokens": 10}) is None
    assert call_cost("", {"input_tokens": 10}) is None
