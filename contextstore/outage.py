"""A database that cannot be reached is an outage, not a bug: every path answers it with 503
and Retry-After, which clients, load balancers and OTLP exporters retry, where a 500 says
"bug, don't retry". Real bugs keep their 500.

`database_unavailable` is the one place that tells the two apart; the API's exception handler
(contextstore.api.exceptions), DatabaseOutageMiddleware (every view: dashboard, OTLP, API
views outside DRF) and `server_error`, the project's handler500 (what is raised outside a view:
a middleware, the session saved after the view), all answer with `outage_response`.

Django drops the broken connection itself at the end of the request (close_old_connections
on request_finished: a connection whose query failed is tested and closed), and with
CONN_HEALTH_CHECKS a connection that died between requests is replaced before its first
query, so the first request after the database is back is served.
"""

import logging
import sqlite3
import sys
from collections.abc import Callable

import psycopg
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.views import defaults

from contextstore.errors import error_body

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
CODE = "database_unavailable"
MESSAGE = "The database is unavailable (restarting, unreachable or busy); retry shortly."

# PostgreSQL's SQLSTATEs for "the server is not there for you now": class 08 (connection
# exception), 57P01 admin_shutdown (fast stop, pg_terminate_backend), 57P02 crash_shutdown,
# 57P03 cannot_connect_now (starting up, shutting down, in recovery), 53300 too_many_connections.
# A statement timeout (57014) or a deadlock is not an outage: it keeps its 500.
UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})
# SQLite: the write lock still held by another connection when busy_timeout ran out (SQLITE_BUSY,
# SQLITE_LOCKED and their extended codes). Nothing was written; the same request succeeds once
# the lock is free, so it is a 503 to retry, like a server that is restarting.
UNAVAILABLE_SQLITE_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})

JSON_PREFIXES = ("/api/", "/otlp/")


def database_unavailable(exc: BaseException) -> bool:
    """Whether `exc` is Django's error for a database that cannot be reached now (refused,
    reset, terminated, timed out, shutting down, locked past busy_timeout), read from the
    driver's error Django wraps (its SQLSTATE on PostgreSQL, its result code on SQLite)."""
    if not isinstance(exc, OperationalError | InterfaceError):
        return False
    cause = exc.__cause__
    if isinstance(cause, psycopg.Error):
        if cause.sqlstate is None:
            # No answer from a server at all: psycopg's errors for refused, reset, closed and
            # timed-out connections, and for a connection already lost ("the connection is closed").
            return isinstance(cause, psycopg.OperationalError | psycopg.InterfaceError)
        return cause.sqlstate.startswith("08") or cause.sqlstate in UNAVAILABLE_SQLSTATES
    if isinstance(cause, sqlite3.Error):
        return (getattr(cause, "sqlite_errorcode", 0) & 0xFF) in UNAVAILABLE_SQLITE_CODES
    return isinstance(exc, InterfaceError)  # a closed connection, whatever the driver


def outage_response(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After: the JSON error shape under /api/ and /otlp/, a page elsewhere."""
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
    if request.path.startswith(JSON_PREFIXES):
        return JsonResponse(error_body(CODE, MESSAGE), status=503, headers=headers)
    # A page of its own, not the dashboard's base: that one reads the user, from the database.
    page = loader.render_to_string("503.html", {"retry_after": RETRY_AFTER_SECONDS,
                                                "path": request.get_full_path()})
    return HttpResponse(page, status=503, headers=headers)


def log_outage(request: HttpRequest, exc: BaseException) -> None:
    # One line per request, not a traceback: during an outage every request fails the same way.
    logger.warning("database unavailable, answered 503 to %s %s: %s: %s", request.method,
                   request.path, type(exc.__cause__ or exc).__name__, exc)


class DatabaseOutageMiddleware:
    """Views that raise a database outage answer 503 (with DEBUG on too)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not database_unavailable(exc):
            return None
        log_outage(request, exc)
        return outage_response(request)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: Django calls it while handling the exception (sys.exc_info() is it), for
    whatever was raised outside a view; an outage answers 503, anything else the 500 page."""
    exc = sys.exc_info()[1]
    if exc is not None and database_unavailable(exc):
        return outage_response(request)
    return defaults.server_error(request)
