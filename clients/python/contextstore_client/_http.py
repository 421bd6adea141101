"""The transport rules the sync and async clients share: retries, errors, parameters."""

from __future__ import annotations

import random
import re
from typing import Any

import httpx
from tenacity import RetryCallState, retry_if_exception_type, stop_after_attempt

from contextstore_client._version import __version__
from contextstore_client.errors import (
    ERRORS,
    ConnectionFailed,
    ContextStoreError,
    ServerError,
)

RETRY_ALWAYS = {429, 503}
RETRY_IF_IDEMPOTENT = {500, 502, 504}


class _Transient(Exception):
    """One failed attempt that may be retried; `failure` is what the caller gets if it was the
    last one allowed."""

    def __init__(self, failure: ContextStoreError, retry_after: float | None = None):
        super().__init__(str(failure))
        self.failure = failure
        self.retry_after = retry_after


def _transport_failure(method: str, path: str, exc: httpx.TransportError,
                       idempotent: bool) -> Exception:
    """A request that got no answer. One that never reached the server (connect, pool) is
    always safe to send again; a lost answer (read timeout, reset) only when repeating is."""
    failure = ConnectionFailed(f"{method} {path}: {exc}")
    failure.__cause__ = exc
    if isinstance(exc, httpx.LocalProtocolError):  # a request httpx cannot send: it never will
        return failure
    never_sent = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))
    return _Transient(failure) if never_sent or idempotent else failure


def _checked(response: httpx.Response, idempotent: bool) -> httpx.Response:
    """The response, or its error: _Transient when the status says trying again may work
    (429/503 always, the server did not act; other 5xx only when repeating is harmless)."""
    status = response.status_code
    if status < 400:
        return response
    error = _error(response)
    if status in RETRY_ALWAYS or (idempotent and status in RETRY_IF_IDEMPOTENT):
        raise _Transient(error, _retry_after(response))
    raise error


def _retry_policy(retries: int, backoff: float, max_backoff: float) -> dict[str, Any]:
    """tenacity settings shared by the sync and async clients: at most `retries` retries of a
    _Transient failure, exponential backoff with jitter, never shorter than the server's
    Retry-After, never longer than 60 s."""

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        retry_after = exc.retry_after if isinstance(exc, _Transient) else None
        delay = min(backoff * (2.0 ** (state.attempt_number - 1)), max_backoff) * (0.5 + random.random())
        return min(max(delay, retry_after or 0.0), 60.0)

    return {"stop": stop_after_attempt(retries + 1), "retry": retry_if_exception_type(_Transient),
            "wait": wait, "reraise": True}


def _http_options(base_url: str, token: str, timeout: float, transport: Any) -> dict[str, Any]:
    """What the sync and the async client both give httpx: the API root, auth and timeout.
    A token that cannot be one is refused here: sent, it would fail every request."""
    if not token:
        raise ValueError("The token is empty: give a workspace API token (the server's "
                         "`manage.py create_api_token --workspace SLUG` prints one).")
    if not re.fullmatch(r"[!-~]+", token):  # visible ASCII only, as an HTTP header allows
        raise ValueError("The token holds spaces, line breaks or other characters no token has "
                         "(read from a file with its newline?).")
    return {"base_url": base_url.rstrip("/") + "/api/v1/", "timeout": timeout, "transport": transport,
            "headers": {"Authorization": f"Bearer {token}", "Accept": "application/json",
                        "User-Agent": f"contextstore-client/{__version__}"}}


def _param(value: Any) -> Any:
    return ("true" if value else "false") if isinstance(value, bool) else value


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _error(response: httpx.Response) -> ContextStoreError:
    """The exception for an error answer, from the API's {"error": {...}} shape when present."""
    status = response.status_code
    try:
        error = response.json()["error"]
        code, message, details = error["code"], error["message"], error.get("details") or {}
    except (ValueError, KeyError, TypeError):
        code, message, details = "http_error", response.text[:500] or response.reason_phrase, {}
    cls = ERRORS.get(status) or (ServerError if status >= 500 else ContextStoreError)
    return cls(message, status=status, code=code, details=details)
