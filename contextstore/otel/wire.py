"""OTLP/HTTP bodies (the OpenTelemetry protocol's traces and logs exports) read into plain
values, and the answers written, in either encoding the specification allows: binary protobuf
(`application/x-protobuf`) and OTLP/JSON (`application/json`). The messages are the official
generated ones (`opentelemetry-proto`); protobuf's `json_format` reads and writes the JSON.

OTLP/JSON differs from protobuf's own JSON mapping in one place: trace and span ids are hex,
not base64. They are turned into base64 before `json_format` parses the body; enums may be
integers or names, unknown fields are ignored, as the specification says.

No database here: the services store what `spans_of` and `logs_of` return.
"""

import base64
import binascii
import json
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from contextstore.jsonstrict import MAX_JSON_DEPTH, too_deep

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
CHUNK = 64 * 1024


class BadBody(ValueError):
    """The body does not decode (encoding, compression or message); the answer is 400."""


class TooLarge(ValueError):
    """The body, once decompressed, is larger than the limit; the answer is 413."""


class TooManySpans(ValueError):
    """The export holds more spans than one export may (OTLP_MAX_SPANS_PER_EXPORT); the answer
    is 413 and nothing of it is kept."""


def encoding_of(content_type: str) -> str | None:
    """PROTOBUF or JSON from a Content-Type header (parameters ignored), else None."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media if media in (PROTOBUF, JSON) else None


def read_limited(read: Callable[[int], bytes], content_encoding: str, limit: int) -> bytes:
    """The request body from `read` (a file-like read), decompressed as it streams for gzip
    and deflate, refused with TooLarge as soon as more than `limit` bytes would be held: the
    limit applies after decompression, so a small bomb never expands in memory."""
    coding = content_encoding.strip().lower()
    if coding in ("", "identity"):
        inflater = None
    elif coding in ("gzip", "x-gzip"):
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif coding == "deflate":
        inflater = zlib.decompressobj(32 + zlib.MAX_WBITS)  # zlib-wrapped, as HTTP's deflate is
    else:
        raise BadBody(f"Unsupported Content-Encoding {content_encoding!r}; use gzip, deflate or none.")
    out = bytearray()
    while chunk := read(CHUNK):
        if inflater is None:
            out += chunk
        else:
            try:
                out += inflater.decompress(chunk, limit + 1 - len(out))
                while inflater.unconsumed_tail and len(out) <= limit:
                    out += inflater.decompress(inflater.unconsumed_tail, limit + 1 - len(out))
            except zlib.error as exc:
                raise BadBody(f"The body is not valid {coding} data ({exc}).") from exc
            if inflater.unused_data:  # bytes after the end: refused, not read on and on
                raise BadBody(f"The body has data after the end of its {coding} stream.")
        if len(out) > limit:
            raise TooLarge(f"The body is larger than {limit} bytes once decompressed.")
    if inflater is not None:
        try:
            out += inflater.flush()
        except zlib.error as exc:
            raise BadBody(f"The body is not valid {coding} data ({exc}).") from exc
        if not inflater.eof:
            raise BadBody(f"The {coding} body is truncated.")
        if len(out) > limit:
            raise TooLarge(f"The body is larger than {limit} bytes once decompressed.")
    return bytes(out)


# ------------------------------------------------------------------ values

def any_value(value: AnyValue) -> Any:
    """An OTLP AnyValue as a plain JSON value (bytes as base64 text)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, kind)


def attributes(pairs: Iterable[KeyValue]) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in pairs}


@dataclass
class Span:
    """One span as stored: ids in lowercase hex, times in nanoseconds since the epoch."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    status_code: int
    status_message: str
    attributes: dict[str, Any]
    events: list[dict[str, Any]]
    resource: dict[str, Any]
    scope: dict[str, Any]
    links: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class LogRecord:
    """One log record that names a span (GenAI content events sent as logs)."""

    trace_id: str
    span_id: str
    time_ns: int
    event_name: str
    body: Any
    attributes: dict[str, Any]


@dataclass
class Decoded[T]:
    """What a body held: the items to store and the ones refused, with why."""

    items: list[T]
    rejected: int = 0
    errors: list[str] = field(default_factory=list)


def _id(raw: bytes, size: int) -> str | None:
    """A trace (16 bytes) or span (8 bytes) id as hex; None when missing, all zero or misshapen."""
    if len(raw) != size or not any(raw):
        return None
    return raw.hex()


def _scope(scope: Any) -> dict[str, Any]:
    return {"name": scope.name, "version": scope.version, "attributes": attributes(scope.attributes)}


def spans_of(request: trace_service_pb2.ExportTraceServiceRequest) -> Decoded[Span]:
    """The spans of an export, each with its resource and scope; a span without a valid trace
    or span id is refused alone (the OTLP partial success), the rest kept."""
    out: Decoded[Span] = Decoded([])
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = _scope(scope_spans.scope)
            for span in scope_spans.spans:
                trace_id, span_id = _id(span.trace_id, 16), _id(span.span_id, 8)
                if trace_id is None or span_id is None:
                    out.rejected += 1
                    out.errors.append(f"span {span.name!r}: a span needs a 16-byte trace id and an "
                                      "8-byte span id, not all zero")
                    continue
                out.items.append(Span(
                    trace_id=trace_id, span_id=span_id, parent_span_id=_id(span.parent_span_id, 8) or "",
                    name=span.name, kind=span.kind, start_ns=span.start_time_unix_nano,
                    end_ns=span.end_time_unix_nano, status_code=span.status.code,
                    status_message=span.status.message, attributes=attributes(span.attributes),
                    events=[{"name": e.name, "time_ns": e.time_unix_nano,
                             "attributes": attributes(e.attributes)} for e in span.events],
                    resource=resource, scope=scope,
                    links=[{"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex(),
                            "attributes": attributes(link.attributes)} for link in span.links]))
    return out


def logs_of(request: logs_service_pb2.ExportLogsServiceRequest) -> Decoded[LogRecord]:
    """The log records that name a span; a record without trace and span ids has nothing to
    attach to and is refused alone."""
    out: Decoded[LogRecord] = Decoded([])
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                trace_id, span_id = _id(record.trace_id, 16), _id(record.span_id, 8)
                if trace_id is None or span_id is None:
                    out.rejected += 1
                    out.errors.append("a log record needs the trace and span ids of its span")
                    continue
                attrs = attributes(record.attributes)
                name = record.event_name or str(attrs.get("event.name") or "")
                out.items.append(LogRecord(
                    trace_id=trace_id, span_id=span_id,
                    time_ns=record.time_unix_nano or record.observed_time_unix_nano,
                    event_name=name, body=any_value(record.body), attributes=attrs))
    return out


# ------------------------------------------------------------------ bodies

_ID_KEYS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


def _hex_ids_to_base64(node: Any) -> None:
    """OTLP/JSON's hex ids rewritten in place as the base64 protobuf's JSON mapping reads."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                try:
                    node[key] = base64.b64encode(bytes.fromhex(value)).decode()
                except ValueError as exc:
                    raise BadBody(f"{key} {value[:40]!r} is not hex.") from exc
            else:
                _hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids_to_base64(item)


def parse[M: Message](body: bytes, encoding: str, message: type[M]) -> M:
    """The export request in `body`; BadBody when it does not decode."""
    request = message()
    if encoding == PROTOBUF:
        try:
            request.ParseFromString(body)
        except (DecodeError, RuntimeError, ValueError) as exc:
            raise BadBody(f"The body is not a protobuf {message.__name__} ({exc}).") from exc
        return request  # type: ignore[no-any-return]  # protobuf has no stubs: Message is Any
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadBody(f"The body is not JSON ({exc}).") from exc
    if too_deep(data):  # as every JSON body the API takes (jsonstrict): the walks below recurse
        raise BadBody(f"The body is JSON nested deeper than {MAX_JSON_DEPTH} levels.")
    if not isinstance(data, dict):
        raise BadBody(f"The body must be a JSON object ({message.__name__}).")
    _hex_ids_to_base64(data)
    try:
        json_format.ParseDict(data, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError, binascii.Error) as exc:
        raise BadBody(f"The body is not an OTLP/JSON {message.__name__} ({exc}).") from exc
    return request  # type: ignore[no-any-return]  # as above


def answer(message: Message, encoding: str) -> bytes:
    """An export response in the request's encoding."""
    if encoding == PROTOBUF:
        serialized: bytes = message.SerializeToString()
        return serialized
    text: str = json_format.MessageToJson(message, indent=None)
    return text.encode()


def status_answer(code: int, message: str, encoding: str) -> bytes:
    """A refusal's body as the OTLP/HTTP specification asks: a `google.rpc.Status` (its gRPC
    `code` and `message`) in the request's encoding."""
    return answer(status_pb2.Status(code=code, message=message), encoding)


RESOURCE_EXHAUSTED = code_pb2.RESOURCE_EXHAUSTED
INVALID_ARGUMENT = code_pb2.INVALID_ARGUMENT
UNAVAILABLE = code_pb2.UNAVAILABLE


def span_count(request: trace_service_pb2.ExportTraceServiceRequest) -> int:
    """How many spans an export holds, counted before any of them is read into values."""
    return sum(len(scope_spans.spans) for resource_spans in request.resource_spans
               for scope_spans in resource_spans.scope_spans)


def traces_answer(rejected: int, errors: list[str], encoding: str) -> bytes:
    response = trace_service_pb2.ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = "; ".join(errors[:10])
    return answer(response, encoding)


def logs_answer(rejected: int, errors: list[str], encoding: str) -> bytes:
    response = logs_service_pb2.ExportLogsServiceResponse()
    if rejected:
        response.partial_success.rejected_log_records = rejected
        response.partial_success.error_message = "; ".join(errors[:10])
    return answer(response, encoding)


TraceRequest = trace_service_pb2.ExportTraceServiceRequest
LogsRequest = logs_service_pb2.ExportLogsServiceRequest
