"""Frameworks that trace themselves, exported over OTLP/HTTP (protobuf, gzip) by the real
exporter to a live server: ADK's built-in telemetry (both its schemas) with a scripted model,
and the OpenAI Agents SDK traced by openinference-instrumentation-openai-agents with its
chat-completions model against a local fake server. Each runs in its framework's virtualenv
(framework_tests/otlp_emitters.py); the session is the one the framework names, its thread
holds each message once, the tool call with its id and arguments, its result, and both LLM
calls with model, usage and cost, in order.

Derivation is a task run after the export's answer; here it runs eagerly in the live server
(tests/worker runs it on a real worker), and the tests wait for it."""

import os
import subprocess
import time
from pathlib import Path

import pytest

from contextstore.models import Event, OtelSpan, Session
from tests.otlp.conftest import derive_eagerly
from tests.otlp.emitters import ANSWER, WEATHER_THREAD, fake_model

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(1800),
              pytest.mark.usefixtures(derive_eagerly.__name__)]


def emit(name: str, live_server, token, session: str, *, env: dict[str, str] | None = None,
         model_url: str = "") -> None:
    subprocess.run([str(ROOT / "scripts/framework-venv"), name], cwd=ROOT, check=True, timeout=1800)
    run = subprocess.run(
        [str(ROOT / f".venv-{name}/bin/python"), "-m", "framework_tests.otlp_emitters", name,
         "--url", live_server.url, "--token", token[1], "--session", session, "--model-url", model_url,
         "--answer", ANSWER],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, capture_output=True,
        text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
    assert run.stdout.strip().splitlines()[-1] == ANSWER


def derived(key: str, *, calls: int = 2, wait: float = 15.0) -> list[Event]:
    """The session's events once its `calls` LLM calls are derived and nothing more arrives."""
    deadline = time.monotonic() + wait
    previous: list[int] = []
    while True:
        events = list(Event.objects.filter(thread__session__key=key).order_by("seq"))
        ids = [e.pk for e in events]
        done = sum(e.type == "LLMComplete" for e in events) >= calls and ids == previous
        if done or time.monotonic() > deadline:
            return events
        previous = ids
        time.sleep(0.3)


def assert_weather_thread(events: list[Event], *, result: str, model: str, provider: str) -> None:
    shape = [(e.type, e.role) for e in events]
    assert shape == WEATHER_THREAD, shape
    system, user, tool_call, tool_result, answer = (events[i] for i in (0, 1, 3, 5, 7))
    # The system prompt is stored once, as the thread's first event.
    assert system.content.startswith("You answer weather questions briefly.")
    assert user.content == "What is the weather in Paris?"
    assert tool_call.call_id == "call_weather_1"
    assert tool_call.parts == [{"type": "tool_call", "id": "call_weather_1", "name": "get_weather",
                                "arguments": {"city": "Paris"}}]
    assert tool_result.call_id == "call_weather_1" and tool_result.content == result
    assert answer.content == ANSWER
    first, second = events[4], events[8]
    assert (first.data["input_tokens"], first.data["output_tokens"]) == (42, 7)
    assert (second.data["input_tokens"], second.data["output_tokens"]) == (57, 9)
    assert first.data["model"] == second.data["model"] == model
    assert first.data["provider"] == provider
    assert 0 < first.data["cost"] < second.data["cost"]  # a listed model: priced from the table
    assert [e.call_id for e in events if e.type.startswith("LLM")] == [
        events[2].call_id, first.call_id, events[6].call_id, second.call_id]
    assert events[2].call_id == first.call_id != second.call_id
    assert len(events[2].data["message_hashes"]) == 2 and len(events[6].data["message_hashes"]) == 4
    assert events[2].occurred_at <= first.occurred_at <= events[6].occurred_at <= second.occurred_at


ADK_RESULT = '{"city": "Paris", "weather": "sunny, 21 degrees"}'


@pytest.mark.parametrize("capture", ["true", "SPAN_AND_EVENT"])
def test_adk_semconv_telemetry_becomes_one_thread(live_server, token, capture):
    """ADK's default schema (GenAI semconv: generate_content spans; the content in
    operation-details log records alone for `true`, on the span too for SPAN_AND_EVENT); the
    session is ADK's, as gen_ai.conversation.id."""
    emit("adk", live_server, token, "adk-semconv-1",
         env={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": capture})
    events = derived("adk-semconv-1")
    assert_weather_thread(events, result=ADK_RESULT, model="gemini-2.5-flash", provider="gcp.gemini")
    session = Session.objects.get(key="adk-semconv-1")
    assert (session.user_id, session.agent) == ("ann", "weather")
    assert session.metadata["otel"]["service_name"] == "weather-adk"
    assert {s.name for s in OtelSpan.objects.all()} >= {
        "invoke_agent weather", "generate_content gemini-2.5-flash", "execute_tool get_weather"}


def test_adk_legacy_telemetry_becomes_one_thread(live_server, token):
    """ADK's legacy schema: call_llm spans with gcp.vertex.agent.llm_request/llm_response and
    gcp.vertex.agent.session_id, each holding a generate_content span of the same call (one
    call, not two), and tool spans that carry an empty llm_request (no call at all)."""
    emit("adk", live_server, token, "adk-legacy-1", env={"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"})
    events = derived("adk-legacy-1")
    assert_weather_thread(events, result=ADK_RESULT, model="gemini-2.5-flash", provider="gemini")
    names = {s.span_id: s.name for s in OtelSpan.objects.all()}
    assert {names[e.call_id] for e in events if e.type == "LLMComplete"} == {"call_llm"}
    assert sum(name.startswith("generate_content") for name in names.values()) == 2
    named = [s.attributes.get("gcp.vertex.agent.session_id") for s in OtelSpan.objects.all()]
    assert named.count("adk-legacy-1") == 2  # the call_llm spans


def test_openai_agents_sdk_traced_by_openinference_becomes_one_thread(live_server, token):
    """The session is the run's group id (as OpenInference context metadata, the only way it
    reaches the spans); the tool span names no call id and is matched to the model's call."""
    with fake_model() as model_url:
        emit("openai-agents", live_server, token, "agents-group-1", model_url=model_url)
    events = derived("agents-group-1")
    assert_weather_thread(events, result="sunny, 21 degrees", model="gpt-4o-mini", provider="openai")
    session = Session.objects.get(key="agents-group-1")
    assert (session.user_id, session.agent) == ("ann", "weather")
    kinds = [s.attributes.get("openinference.span.kind") for s in OtelSpan.objects.all()]
    assert kinds.count("TOOL") == 1 and kinds.count("LLM") == 2
