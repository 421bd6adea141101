"""POST /otlp/v1/traces and /logs as the OTLP/HTTP specification has them: both encodings,
compression, the size limit after decompression, auth, partial success, bad bodies, replays
and a database outage."""

import gzip
import json
import tracemalloc
import zlib

import pytest
from django.db import connection
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from contextstore.models import Event, OtelLog, OtelSpan, Session
from tests.outage import losing_connection_on

from .conftest import TRACE, attr, export, span

CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.conversation.id": "conv-1",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant",
                                               "parts": [{"type": "text", "content": "Hello"}]}])}
PROTOBUF = "application/x-protobuf"


def sdk_protobuf() -> bytes:
    """An export the OpenTelemetry SDK itself encodes: one chat span."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("tests").start_as_current_span("chat gpt-4o", attributes=CHAT):
        pass
    return encode_spans(exporter.get_finished_spans()).SerializeToString()


def stored() -> tuple[int, int, int]:
    return OtelSpan.objects.count(), Event.objects.count(), Session.objects.count()


def test_a_protobuf_export_is_answered_with_an_empty_protobuf_response(otlp):
    response = otlp(sdk_protobuf(), content_type=PROTOBUF)
    assert response.status_code == 200
    assert response["Content-Type"] == PROTOBUF
    assert ExportTraceServiceResponse.FromString(response.content) == ExportTraceServiceResponse()
    assert [(e.type, e.content) for e in Event.objects.order_by("seq")] == [
        ("Message", "Hi"), ("LLMCallStart", ""), ("Message", "Hello"), ("LLMComplete", "")]


def test_a_json_export_is_answered_in_json(otlp):
    response = otlp(export(span("00f067aa0ba902b7", "chat gpt-4o", CHAT)))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {}
    assert OtelSpan.objects.get().trace_id == TRACE


@pytest.mark.parametrize("encoding,compress", [
    ("gzip", gzip.compress), ("deflate", zlib.compress)])
def test_compressed_bodies_are_inflated(otlp, encoding, compress):
    response = otlp(compress(sdk_protobuf()), content_type=PROTOBUF, **{"Content-Encoding": encoding})
    assert response.status_code == 200
    assert Event.objects.filter(type="LLMCallStart").count() == 1


def test_the_limit_applies_after_decompression_and_a_bomb_never_expands(otlp, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "OTLP_MAX_BYTES": 1024 * 1024}
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < 100 * 1024
    tracemalloc.start()
    try:
        response = otlp(bomb, content_type=PROTOBUF, **{"Content-Encoding": "gzip"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert response.status_code == 413
    assert peak < 6 * 1024 * 1024  # the 1 MiB limit and the read chunks, not 64 MiB
    assert stored() == (0, 0, 0)


def test_an_uncompressed_body_over_the_limit_is_413(otlp, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "OTLP_MAX_BYTES": 100}
    assert otlp(sdk_protobuf(), content_type=PROTOBUF).status_code == 413
    assert stored() == (0, 0, 0)


@pytest.mark.parametrize("auth,status", [
    ("", 401), ("Bearer cs_not_a_token", 401), ("Basic dXNlcjpwdw==", 401), ("Bearer", 401)])
def test_a_missing_or_wrong_token_is_401_and_stores_nothing(otlp, auth, status):
    response = otlp(export(span("00f067aa0ba902b7", "chat", CHAT)), auth=auth or " ")
    assert response.status_code == status
    assert response.json()["error"]["code"] == "not_authenticated"
    assert stored() == (0, 0, 0)


def test_a_read_token_is_403_and_stores_nothing(otlp, read_token):
    response = otlp(export(span("00f067aa0ba902b7", "chat", CHAT)), auth=f"Bearer {read_token[1]}")
    assert response.status_code == 403
    assert stored() == (0, 0, 0)


@pytest.mark.parametrize("body,content_type,headers", [
    (b"\x0a\xff\xff\xff", PROTOBUF, {}),  # a truncated protobuf field
    (b"{not json", "application/json", {}),
    (b"[1, 2]", "application/json", {}),
    (json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}).encode(),
     "application/json", {}),
    (json.dumps({"resourceSpans": "nope"}).encode(), "application/json", {}),
    (b"\x1f\x8b not gzip", PROTOBUF, {"Content-Encoding": "gzip"}),
    (gzip.compress(b"x" * 100, mtime=0)[:-8], PROTOBUF, {"Content-Encoding": "gzip"}),  # truncated
    (b"abc", PROTOBUF, {"Content-Encoding": "br"}),
    (gzip.compress(b"", mtime=0) + b"trailing junk", PROTOBUF, {"Content-Encoding": "gzip"}),
])
def test_a_body_that_does_not_decode_is_400_and_stores_nothing(otlp, body, content_type, headers):
    response = otlp(body, content_type=content_type, **headers)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid"
    assert stored() == (0, 0, 0)


def test_another_media_type_is_415(otlp):
    assert otlp(b"x", content_type="text/plain").status_code == 415


def test_only_post_is_allowed(client):
    assert client.get("/otlp/v1/traces").status_code == 405


def test_spans_refused_alone_are_a_partial_success(otlp):
    good = span("00f067aa0ba902b7", "chat", CHAT)
    no_span_id = span("0000000000000000", "chat", CHAT)
    short_trace = span("00f067aa0ba902b8", "chat", CHAT, trace_id="abcd")
    response = otlp(export(good, no_span_id, short_trace))
    assert response.status_code == 200
    body = response.json()
    assert body["partialSuccess"]["rejectedSpans"] == "2"
    assert "trace id" in body["partialSuccess"]["errorMessage"]
    assert OtelSpan.objects.count() == 1


def test_a_replayed_export_changes_nothing(otlp):
    body = export(span("00f067aa0ba902b7", "chat", CHAT))
    assert otlp(body).status_code == 200
    first = list(Event.objects.order_by("seq").values_list("seq", "type", "content"))
    assert otlp(body).status_code == 200
    assert otlp(gzip.compress(json.dumps(body).encode()), **{"Content-Encoding": "gzip"}).status_code == 200
    assert list(Event.objects.order_by("seq").values_list("seq", "type", "content")) == first
    assert OtelSpan.objects.count() == 1


def test_a_database_outage_is_503_with_retry_after_and_the_retry_stores_once(otlp):
    body = export(span("00f067aa0ba902b7", "chat", CHAT))

    with connection.execute_wrapper(losing_connection_on("otel")):
        response = otlp(body)
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert OtelSpan.objects.count() == 0
    assert otlp(body).status_code == 200
    assert OtelSpan.objects.count() == 1
    assert Event.objects.filter(type="LLMComplete").count() == 1


def test_log_records_attach_content_to_their_span_in_any_order(otlp):
    """Content sent as a log record (gen_ai.client.inference.operation.details) names its span
    by trace and span id; the record may come before the span."""
    details = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{
        "timeUnixNano": "1760000001000000000", "traceId": TRACE, "spanId": "00f067aa0ba902b7",
        "eventName": "gen_ai.client.inference.operation.details",
        "attributes": [attr("gen_ai.input.messages", CHAT["gen_ai.input.messages"]),
                       attr("gen_ai.output.messages", CHAT["gen_ai.output.messages"])]}]}]}]}
    response = otlp(details, signal="logs")
    assert response.status_code == 200 and response.json() == {}
    assert OtelLog.objects.count() == 1 and Event.objects.count() == 0
    bare = {k: v for k, v in CHAT.items() if "messages" not in k}
    assert otlp(export(span("00f067aa0ba902b7", "chat gpt-4o", bare))).status_code == 200
    assert [(e.type, e.content) for e in Event.objects.order_by("seq")] == [
        ("Message", "Hi"), ("LLMCallStart", ""), ("Message", "Hello"), ("LLMComplete", "")]
    assert otlp(details, signal="logs").status_code == 200  # replayed: nothing new
    assert OtelLog.objects.count() == 1 and Event.objects.count() == 4


def test_a_log_record_without_its_span_ids_is_refused_alone(otlp):
    body = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {"stringValue": "x"}}]}]}]}
    response = otlp(body, signal="logs")
    assert response.json()["partialSuccess"]["rejectedLogRecords"] == "1"
    protobuf = otlp(b"\x0a\x00", signal="logs", content_type=PROTOBUF)  # one empty ResourceLogs
    assert protobuf.status_code == 200
    assert ExportLogsServiceResponse.FromString(protobuf.content) == ExportLogsServiceResponse()


def test_any_text_a_span_carries_is_kept_and_a_lone_surrogate_is_refused(otlp):
    nul = span("00f067aa0ba902b7", "chat\x00name", {**CHAT, "gen_ai.input.messages": json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": "a\x00b"}]}])},
        status={"code": 2, "message": "bad\x00thing"})
    assert otlp(export(nul)).status_code == 200
    stored_span = OtelSpan.objects.get()
    assert (stored_span.name, stored_span.status_message) == ("chat\x00name", "bad\x00thing")
    assert Event.objects.get(type="Message", role="user").content == "a\x00b"
    body = json.dumps(export(span("00f067aa0ba902b8", "chat", CHAT))).replace('"chat"', '"\\ud800"', 1)
    response = otlp(body.encode())
    assert response.status_code == 400
    assert OtelSpan.objects.count() == 1


def test_a_message_over_the_event_limit_is_cut_and_the_session_still_derived(otlp, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "MAX_EVENT_CONTENT_BYTES": 1000}
    huge = {**CHAT, "gen_ai.input.messages": json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": "é" * 5000}]}])}
    assert otlp(export(span("00f067aa0ba902b7", "chat", huge))).status_code == 200
    user = Event.objects.get(role="user")
    assert user.content.endswith("[truncated]") and len(user.content.encode()) <= 1000
    assert user.data["truncated_from_bytes"] == 10000
    assert Event.objects.filter(type="LLMComplete").exists()
