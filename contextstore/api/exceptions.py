"""One exception handler: DRF errors and domain errors both become
{"error": {"code", "message", "details"}} with the right status."""

import logging
import re
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from contextstore import outage
from contextstore.errors import DomainError, error_body

logger = logging.getLogger(__name__)

CODES = {400: "invalid", 401: "not_authenticated", 403: "permission_denied", 404: "not_found"}


def _flatten(detail: Any) -> Any:
    """ErrorDetail trees become plain strings (or lists of them) for the details object."""
    if isinstance(detail, dict):
        return {str(k): _flatten(v) for k, v in detail.items()}
    if isinstance(detail, list):
        flat = [_flatten(v) for v in detail]
        return flat[0] if len(flat) == 1 and isinstance(flat[0], str) else flat
    return str(detail)


def _first_message(details: Any, fallback: str) -> str:
    if isinstance(details, dict) and details:
        key, value = next(iter(details.items()))
        inner = _first_message(value, fallback)
        return inner if key in ("non_field_errors", "errors") else f"{key}: {inner}"
    if isinstance(details, list) and details:
        return _first_message(details[0], fallback)
    if isinstance(details, str):
        return details
    return fallback


_LEADING_PLACE = re.compile(r"^([A-Za-z_][\w]*(?:\[\d+\])?(?:\.[A-Za-z_]\w*(?:\[\d+\])?)*)[: ]")
_NOT_PLACES = {"The", "A", "An", "No", "At", "Each", "Two", "Event", "Not", "Unknown", "This"}


def _place_of(message: str) -> str:
    """The place a domain error without details is about: the field its message starts with
    (`events[0].seq must be...`, `start_position must...`), else the body as a whole."""
    match = _LEADING_PLACE.match(message)
    if match and match[1] not in _NOT_PLACES:
        return match[1]
    return "body"


class PayloadTooLargeError(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    headers: dict[str, str] = {}
    if isinstance(exc, DomainError):
        set_rollback()
        details = exc.details or {_place_of(exc.message): exc.message}
        return Response(error_body(exc.code, exc.message, details), status=exc.status)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLargeError()
    if outage.database_unavailable(exc):
        outage.log_outage(context["request"], exc)
        set_rollback()
        return Response(error_body(outage.CODE, outage.MESSAGE), status=503,
                        headers={"Retry-After": str(outage.RETRY_AFTER_SECONDS)})
    if not isinstance(exc, exceptions.APIException):
        # Unexpected: log it with its traceback and still answer in the error shape.
        logger.exception("Unhandled error in %s", context.get("view").__class__.__name__)
        set_rollback()
        return Response(error_body("server_error", "Internal server error."), status=500)

    if isinstance(exc, exceptions.Throttled):
        wait = exc.wait  # type: ignore[attr-defined]  # Throttled sets it; the stub leaves it out
        if wait is not None:
            headers["Retry-After"] = str(max(int(wait + 0.999), 1))
        body = error_body("throttled", "Too many requests; retry later.", {"retry_after": wait})
    elif isinstance(exc, exceptions.ValidationError):
        details = _flatten(exc.detail)
        if not isinstance(details, dict):
            details = {"non_field_errors": details if isinstance(details, list) else [details]}
        body = error_body("invalid", _first_message(details, "Invalid input."), details)
    else:
        code = getattr(exc.detail, "code", None) or exc.default_code or CODES.get(exc.status_code)
        # A body that is not JSON at all: the place to name is the body itself.
        body = error_body(str(code), str(exc.detail),
                          {"body": str(exc.detail)} if isinstance(exc, exceptions.ParseError) else None)
    if isinstance(exc, exceptions.AuthenticationFailed | exceptions.NotAuthenticated):
        auth_header = getattr(exc, "auth_header", None)
        if auth_header:
            headers["WWW-Authenticate"] = auth_header
    set_rollback()
    return Response(body, status=exc.status_code, headers=headers)


@csrf_exempt  # token-authenticated API: no cookies, so no CSRF (and never an HTML 403)
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Unknown paths under /api/ answer in the error shape too, not with an HTML page."""
    return JsonResponse(error_body("not_found", f"No API endpoint at {request.path}."), status=404)
