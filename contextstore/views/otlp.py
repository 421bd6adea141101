"""OTLP/HTTP receivers: `POST /otlp/v1/traces` and `/otlp/v1/logs`, as the OpenTelemetry
protocol specifies them, so `OTEL_EXPORTER_OTLP_ENDPOINT=https://host/otlp` and
`OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer <token>` point any instrumented agent here.

The view checks the token, reads the body (decompressed within OTLP_MAX_BYTES), decodes it
(contextstore/otel/wire.py) and hands the spans to one service. Answers: 200 with an empty
export response (or its partial_success) in the request's encoding; 400 for a body that does
not decode, 401/403 for a bad or read-only token, 413 over the byte or span limit, 415 for
another encoding, 429 with Retry-After when the token is over its rate (the API's own window,
contextstore.ratelimit), 503 with Retry-After while the database is unavailable
(contextstore.outage), and 503 with Retry-After while derivation is further behind than its
bound (OTLP_BACKLOG_MAX_TRACES, OTLP_BACKLOG_MAX_AGE: back-pressure, nothing of the export kept).
Exporters retry 429 and 503 after Retry-After; those refusals (and the span limit's) carry a
`google.rpc.Status` in the request's encoding, as the specification asks.
"""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from contextstore.errors import DomainError, NotAuthenticated, error_body
from contextstore.models import ApiToken
from contextstore.otel import wire
from contextstore.ratelimit import retry_after_header, token_rate, token_throttle
from contextstore.selectors.otlp_backlog import otlp_backlog
from contextstore.services.common import Actor
from contextstore.services.otlp.ingest import export_ingest
from contextstore.services.workspaces import api_token_of_header


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JsonResponse:
    return JsonResponse(error_body(code, message), status=status, headers=headers)


def _token(request: HttpRequest) -> ApiToken | JsonResponse:
    challenge = {"WWW-Authenticate": 'Bearer realm="otlp"'}
    try:
        token = api_token_of_header(request.headers.get("Authorization", ""))
    except NotAuthenticated as exc:
        return _error(401, exc.code, exc.message, challenge)
    if token is None:
        return _error(401, "not_authenticated", "Send 'Authorization: Bearer <API token>'.", challenge)
    if not token.can_write:
        return _error(403, "permission_denied", "This token has read scope; exports need write scope.")
    return token


def _status(status: int, code: int, message: str, encoding: str,
            headers: dict[str, str] | None = None) -> HttpResponse:
    return HttpResponse(wire.status_answer(code, message, encoding), status=status,
                        content_type=encoding, headers=headers)


def _export(request: HttpRequest, handle: Callable[[ApiToken, bytes, str], bytes]) -> HttpResponse:
    # A database outage raised here answers 503 + Retry-After (contextstore.outage's middleware).
    token = _token(request)
    if isinstance(token, JsonResponse):
        return token
    encoding = wire.encoding_of(request.content_type or "")
    if encoding is None:
        return _error(415, "unsupported_media_type",
                      "Send application/x-protobuf or application/json.")
    wait = token_throttle(token.pk, token_rate())  # before the body is read: a refusal costs nothing
    if wait is not None:
        return _status(429, wire.RESOURCE_EXHAUSTED, "Too many requests for this API token; retry later.",
                       encoding, {"Retry-After": retry_after_header(wait)})
    if over := otlp_backlog(exact=False).over:  # before the body is read, as the rate limit
        return _status(503, wire.UNAVAILABLE,
                       f"Derivation is behind (its {'backlog' if over == 'traces' else 'oldest trace'} "
                       "is past the bound); nothing was kept: retry later.", encoding,
                       {"Retry-After": str(settings.CONTEXTSTORE["OTLP_BACKLOG_RETRY_AFTER"])})
    limit = settings.CONTEXTSTORE["OTLP_MAX_BYTES"]
    try:
        body = wire.read_limited(request.read, request.headers.get("Content-Encoding", ""), limit)
        answer = handle(token, body, encoding)
    except wire.TooLarge as exc:
        return _error(413, "payload_too_large", str(exc))
    except wire.TooManySpans as exc:
        return _status(413, wire.INVALID_ARGUMENT, str(exc), encoding)
    except wire.BadBody as exc:
        return _error(400, "invalid", str(exc))
    except DomainError as exc:  # a workspace's redaction pattern ran too long: nothing kept
        return _error(exc.status, exc.code, exc.message)
    return HttpResponse(answer, content_type=encoding)


def _traces(token: ApiToken, body: bytes, encoding: str) -> bytes:
    request = wire.parse(body, encoding, wire.TraceRequest)
    cap = settings.CONTEXTSTORE["OTLP_MAX_SPANS_PER_EXPORT"]
    if (count := wire.span_count(request)) > cap:
        raise wire.TooManySpans(
            f"The export holds {count} spans; at most {cap} are taken in one export. Nothing was "
            "kept: send smaller batches (OTEL_BSP_MAX_EXPORT_BATCH_SIZE, the collector's "
            "send_batch_max_size).")
    decoded = wire.spans_of(request)
    export_ingest(workspace=token.workspace, spans=decoded.items, actor=Actor.for_token(token))
    return wire.traces_answer(decoded.rejected, decoded.errors, encoding)


def _logs(token: ApiToken, body: bytes, encoding: str) -> bytes:
    decoded = wire.logs_of(wire.parse(body, encoding, wire.LogsRequest))
    export_ingest(workspace=token.workspace, records=decoded.items, actor=Actor.for_token(token))
    return wire.logs_answer(decoded.rejected, decoded.errors, encoding)


@csrf_exempt  # token-authenticated, no cookies
@require_POST
def traces(request: HttpRequest) -> HttpResponse:
    return _export(request, _traces)


@csrf_exempt
@require_POST
def logs(request: HttpRequest) -> HttpResponse:
    return _export(request, _logs)
