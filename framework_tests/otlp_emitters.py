"""Agents whose frameworks trace themselves, exported over OTLP/HTTP (protobuf, gzip) to a
contextstore; run inside the framework's virtualenv by tests/frameworks/test_otlp_emitters.py:

    .venv-adk/bin/python -m framework_tests.otlp_emitters adk --url URL --token cs_... --session ID
    .venv-openai-agents/bin/python -m framework_tests.otlp_emitters openai-agents --url URL \\
        --token cs_... --session ID --model-url http://127.0.0.1:PORT/v1

Each is the same weather agent: the model asks for the `get_weather` tool, gets its result,
answers. ADK's model is scripted (a BaseLlm yielding fixed responses) and traced by ADK's own
telemetry (google.adk.telemetry: its schema picked by ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN, the
content captured as OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT says), with the providers
ADK sets up itself from the OTEL_EXPORTER_OTLP_* variables. The OpenAI Agents SDK's model is its
chat-completions model against the tests' local fake server, traced by
openinference-instrumentation-openai-agents. Prints the agent's answer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

INSTRUCTIONS = "You answer weather questions briefly."
QUESTION = "What is the weather in Paris?"


def run_adk(args: argparse.Namespace) -> str:
    # ADK's own set-up reads the standard variables; no metrics endpoint is named, so it exports
    # traces and logs (the GenAI content events) only.
    os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"{args.url}/otlp/v1/traces"
    os.environ["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"] = f"{args.url}/otlp/v1/logs"
    os.environ["OTEL_EXPORTER_OTLP_HEADERS"] = f"Authorization=Bearer {args.token}"
    os.environ["OTEL_EXPORTER_OTLP_COMPRESSION"] = "gzip"
    os.environ["OTEL_SERVICE_NAME"] = "weather-adk"
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.adk.telemetry.setup import maybe_set_otel_providers
    from google.genai import types
    from opentelemetry import _logs, trace

    maybe_set_otel_providers()

    class ScriptedLlm(BaseLlm):
        model: str = "gemini-2.5-flash"
        script: list[Any] = []

        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            yield self.script.pop(0)

    def get_weather(city: str) -> dict[str, str]:
        """Weather in a city."""
        return {"city": city, "weather": "sunny, 21 degrees"}

    def usage(prompt: int, candidates: int) -> Any:
        return types.GenerateContentResponseUsageMetadata(
            prompt_token_count=prompt, candidates_token_count=candidates,
            total_token_count=prompt + candidates)

    call = types.FunctionCall(id="call_weather_1", name="get_weather", args={"city": "Paris"})
    llm = ScriptedLlm(script=[
        LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]),
                    usage_metadata=usage(42, 7), finish_reason=types.FinishReason.STOP),
        LlmResponse(content=types.Content(role="model", parts=[types.Part(text=args.answer)]),
                    usage_metadata=usage(57, 9), finish_reason=types.FinishReason.STOP),
    ])
    agent = LlmAgent(name="weather", model=llm, tools=[get_weather], instruction=INSTRUCTIONS)

    async def run() -> str:
        runner = InMemoryRunner(agent=agent, app_name="weather-app")
        session = await runner.session_service.create_session(
            app_name="weather-app", user_id="ann", session_id=args.session)
        message = types.Content(role="user", parts=[types.Part(text=QUESTION)])
        texts = [part.text async for event in runner.run_async(
            user_id="ann", session_id=session.id, new_message=message)
            if event.content for part in event.content.parts or () if part.text]
        return texts[-1]

    try:
        return asyncio.run(run())
    finally:
        trace.get_tracer_provider().shutdown()  # type: ignore[attr-defined]  # flushes the batches
        _logs.get_logger_provider().shutdown()  # type: ignore[attr-defined]


def run_openai_agents(args: argparse.Namespace) -> str:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
    from openai import AsyncOpenAI
    from openinference.instrumentation import using_metadata, using_user
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agents"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
        endpoint=f"{args.url}/otlp/v1/traces", headers={"Authorization": f"Bearer {args.token}"},
        compression=Compression.Gzip, timeout=10)))
    # Exclusive (the default): the SDK's own exporter to OpenAI's backend is replaced.
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

    @function_tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return "sunny, 21 degrees"

    client = AsyncOpenAI(base_url=args.model_url, api_key="sk-test", max_retries=0)
    agent = Agent(name="weather", instructions=INSTRUCTIONS, tools=[get_weather],
                  model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client))

    async def run() -> str:
        # The instrumentation exports neither RunConfig.group_id nor the trace's metadata: the
        # group id reaches the spans as OpenInference context metadata.
        with using_metadata({"group_id": args.session}), using_user("ann"):
            result = await Runner.run(agent, QUESTION, run_config=RunConfig(
                group_id=args.session, workflow_name="weather flow"))
        return str(result.final_output)

    try:
        return asyncio.run(run())
    finally:
        OpenAIAgentsInstrumentor().uninstrument()
        provider.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", choices=["adk", "openai-agents"])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--model-url", default="")
    parser.add_argument("--answer", default="It is sunny in Paris, 21 degrees.")
    args = parser.parse_args(argv)
    print(run_adk(args) if args.framework == "adk" else run_openai_agents(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
