"""The errors the client raises: one ContextStoreError subclass per API status."""

from __future__ import annotations

from typing import Any

__all__ = [
    "Conflict", "ConnectionFailed", "ContextStoreError", "Forbidden", "InvalidInput", "NotFound",
    "PayloadTooLarge", "ServerError", "StaleRevision", "Throttled", "Unauthorized",
]


class ContextStoreError(Exception):
    """An error answer from the API: `status`, `code`, `message`, `details`."""

    status: int = 0

    def __init__(self, message: str, *, status: int = 0, code: str = "error",
                 details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.status = status or self.status
        self.code = code
        self.details = details or {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status}, {self.code!r}, {self.message!r})"


class InvalidInput(ContextStoreError):
    status = 400


class Unauthorized(ContextStoreError):
    status = 401


class Forbidden(ContextStoreError):
    status = 403


class NotFound(ContextStoreError):
    status = 404


class Conflict(ContextStoreError):
    status = 409


class StaleRevision(ContextStoreError):
    """The state changed since the revision you based your write on: read it again."""

    status = 412


class PayloadTooLarge(ContextStoreError):
    status = 413


class Throttled(ContextStoreError):
    status = 429


class ServerError(ContextStoreError):
    status = 500


class ConnectionFailed(ContextStoreError):
    """The server could not be reached (after retries)."""


ERRORS: dict[int, type[ContextStoreError]] = {
    400: InvalidInput, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
    412: StaleRevision, 413: PayloadTooLarge, 429: Throttled,
}
