"""The openai client instrumented by OpenLLMetry and by OpenInference, exported by the real
OTLP/HTTP exporter with gzip to a live server: one thread, each message once, in order."""

import pytest
from opentelemetry import trace as otel_trace

from contextstore.models import Event, OtelSpan, Session

from .emitters import ANSWER, WEATHER_THREAD, exporting_provider, fake_model, weather_agent

pytestmark = pytest.mark.django_db(transaction=True)


def run_instrumented(instrumentor, live_server, token, conversation: str, *, from_env: bool = False) -> str:
    if from_env:
        provider = exporting_provider(None, None, "weather-service")
    else:
        provider = exporting_provider(live_server.url, token[1], "weather-service")
    instrumentor.instrument(tracer_provider=provider)
    try:
        with fake_model() as base_url:
            tracer = provider.get_tracer("tests.agent")
            with tracer.start_as_current_span("invoke_agent weather", attributes={
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather",
                    "gen_ai.conversation.id": conversation, "user.id": "ann"}):
                answer = weather_agent(base_url)
    finally:
        instrumentor.uninstrument()
        provider.force_flush()
        provider.shutdown()
        otel_trace.get_tracer_provider()  # nothing global was set
    return answer


def thread_of(conversation: str):
    session = Session.objects.get(key=conversation)
    assert session.user_id == "ann" and session.agent == "weather"
    assert session.metadata["otel"]["source"] == "opentelemetry"
    assert session.metadata["otel"]["service_name"] == "weather-service"
    return session.threads.get()


def assert_one_clean_thread(thread, scope: str) -> None:
    events = list(Event.objects.filter(thread=thread).order_by("seq"))
    shape = [(e.type, e.role) for e in events]
    assert shape == WEATHER_THREAD, shape
    user, tool_call, tool_result, answer = events[1], events[3], events[5], events[7]
    assert user.content == "What is the weather in Paris?"
    assert tool_call.parts == [{"type": "tool_call", "id": "call_weather_1", "name": "get_weather",
                                "arguments": {"city": "Paris"}}]
    assert tool_result.call_id == "call_weather_1" and tool_result.content == "sunny, 21 degrees"
    assert answer.content == ANSWER
    first, second = events[4], events[8]
    assert (first.data["input_tokens"], first.data["output_tokens"]) == (42, 7)
    assert (second.data["input_tokens"], second.data["output_tokens"]) == (57, 9)
    assert first.data["model"] == second.data["model"] == "gpt-4o-mini-2024-07-18"
    assert 0 < first.data["cost"] < second.data["cost"]  # gpt-4o-mini's list price
    assert events[2].data["otel"]["scope"] == scope
    assert len(events[2].data["message_hashes"]) == 2 and len(events[6].data["message_hashes"]) == 4
    assert events[2].occurred_at <= first.occurred_at <= events[6].occurred_at <= second.occurred_at


def test_openllmetry_traces_become_one_thread(live_server, token):
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    assert run_instrumented(OpenAIInstrumentor(), live_server, token, "conv-llmetry") == ANSWER
    assert OtelSpan.objects.count() == 3
    assert_one_clean_thread(thread_of("conv-llmetry"), "opentelemetry.instrumentation.openai.v1")


def test_openinference_traces_become_one_thread(live_server, token, monkeypatch):
    """Configured by README's two environment variables alone."""
    from openinference.instrumentation.openai import OpenAIInstrumentor

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"{live_server.url}/otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer {token[1]}")
    assert run_instrumented(OpenAIInstrumentor(), live_server, token, "conv-openinference",
                            from_env=True) == ANSWER
    assert OtelSpan.objects.count() == 3
    assert_one_clean_thread(thread_of("conv-openinference"), "openinference.instrumentation.openai")
