"""Request ids: one per request, on the response, in every log line written while it runs.

A proxy or load balancer that already assigns ids (X-Request-ID) keeps its id, so one request
can be followed from the proxy's log into ours. This module imports no models: the logging
configuration loads RequestIdFilter before the apps are ready.
"""

import logging
import re
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, HttpResponseBase
from django.middleware.gzip import GZipMiddleware

REQUEST_ID_HEADER = "X-Request-ID"
# A client-chosen id goes into logs and a response header: keep it short and plain.
_VALID_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

request_id_var: ContextVar[str] = ContextVar("request_id", default="-")
request_logger = logging.getLogger("contextstore.request")


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every record ("-" outside a request), for text and JSON formats.

    Django logs 4xx/5xx responses (django.request) after the middleware has returned; those
    records carry the request itself, so its id is taken from there."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            request = getattr(record, "request", None)
            record.request_id = getattr(request, "request_id", None) or request_id_var.get()
        return True


class SqlClock:
    """A database execute_wrapper that adds up the time and number of the statements it runs
    (Server-Timing below; bench_api's split of a request into Python and SQL)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.count = 0

    def __call__(self, execute: Callable, *args: Any) -> Any:
        began = time.perf_counter()
        try:
            return execute(*args)
        finally:
            self.seconds += time.perf_counter() - began
            self.count += 1


class RequestIdMiddleware:
    """Assigns the request id and writes one access line per request (method, path, status,
    duration), so gunicorn's own access log can stay off and every line is structured."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        incoming = request.headers.get(REQUEST_ID_HEADER, "")
        request_id = incoming if _VALID_ID.match(incoming) else uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]  # ours: RequestIdFilter reads it
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        try:
            if settings.SERVER_TIMING:
                response = self.timed(request, started)
            else:
                response = self.get_response(request)
            response[REQUEST_ID_HEADER] = request_id
            request_logger.info(
                "%s %s %s", request.method, request.path, response.status_code,
                extra={
                    "method": request.method,
                    "path": request.path,
                    "status": response.status_code,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )
            return response
        finally:
            request_id_var.reset(token)

    def timed(self, request: HttpRequest, started: float) -> HttpResponseBase:
        """The response with a Server-Timing header (SERVER_TIMING): the time the request took
        in Django, and of it the time and number of SQL statements. A client (devtools, the
        benchmarks) can then tell the server's share of a call from its own and the network's."""
        sql = SqlClock()
        with ExitStack() as stack:
            for alias in connections:
                stack.enter_context(connections[alias].execute_wrapper(sql))
            response = self.get_response(request)
        total = (time.perf_counter() - started) * 1000
        response["Server-Timing"] = (f'app;dur={total:.2f}, db;dur={sql.seconds * 1000:.2f};'
                                     f'desc="{sql.count} statements"')
        return response


class HtmlGZipMiddleware:
    """Compress dashboard pages (HTML), nothing else.

    A thread page is mostly repeated markup and shrinks ~5x. The JSON API is left as it is:
    agents and their proxies handle its encoding, and a body they did not ask to decode would
    break clients that send Accept-Encoding without decompressing. Django's GZipMiddleware does
    the work, including the random padding that defeats BREACH-style guessing of the CSRF token.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        self.gzip = GZipMiddleware(get_response)

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html"):
            return self.gzip.process_response(request, response)
        return response
