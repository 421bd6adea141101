"""Real emitters for the OTLP tests: the `openai` client against a local fake chat-completions
server (one tool-call round trip, then an answer), instrumented by OpenLLMetry or OpenInference
and exported by the OpenTelemetry SDK's OTLP/HTTP exporter (protobuf, gzip)."""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

TOOL_CALL = {"id": "call_weather_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
ANSWER = "It is sunny in Paris, 21 degrees."
# The thread a weather agent's traces become, as (type, role): each message once, both calls.
WEATHER_THREAD = [
    ("Message", "system"), ("Message", "user"), ("LLMCallStart", ""),
    ("ToolCall", "assistant"), ("LLMComplete", ""),
    ("ToolResult", "tool"), ("LLMCallStart", ""), ("Message", "assistant"), ("LLMComplete", ""),
]


class FakeChatCompletions(BaseHTTPRequestHandler):
    """POST /v1/chat/completions: first a tool call, then (once a tool result is sent) an answer."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answered = any(m.get("role") == "tool" for m in body["messages"])
        message: dict[str, Any] = ({"role": "assistant", "content": ANSWER} if answered else
                                   {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]})
        usage = {"prompt_tokens": 57 if answered else 42, "completion_tokens": 9 if answered else 7}
        out = json.dumps({
            "id": f"chatcmpl-{len(body['messages'])}", "object": "chat.completion", "created": 1,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "stop" if answered else "tool_calls"}],
            "usage": {**usage, "total_tokens": sum(usage.values())}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def fake_model() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeChatCompletions)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()


def exporting_provider(url: str | None, token: str | None, service: str) -> TracerProvider:
    """A tracer provider exporting over OTLP/HTTP with gzip, to `url` with `token`; with None
    for both, the exporter reads README's environment variables alone."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    if url is None:
        exporter = OTLPSpanExporter(compression=Compression.Gzip)
    else:
        exporter = OTLPSpanExporter(endpoint=f"{url}/otlp/v1/traces",
                                    headers={"Authorization": f"Bearer {token}"},
                                    compression=Compression.Gzip, timeout=10)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def weather_agent(base_url: str) -> str:
    """A two-call agent: the model asks for the weather tool, gets its result, answers."""
    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You answer weather questions briefly."},
        {"role": "user", "content": "What is the weather in Paris?"}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
    call = first.choices[0].message.tool_calls[0]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 degrees"})
    second = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
    return second.choices[0].message.content or ""
