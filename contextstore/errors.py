"""Domain errors raised by services; the API turns each into its JSON error shape."""

from typing import Any


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    """The one error shape of every JSON answer: {"error": {"code", "message", "details"}}."""
    if details is None:
        details = {}
    elif not isinstance(details, dict):
        details = {"errors": details}
    return {"error": {"code": code, "message": message, "details": details}}


class DomainError(Exception):
    code = "error"
    status = 400

    def __init__(self, message: str, *, details: dict[str, Any] | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}
        if code:
            self.code = code


class InvalidInput(DomainError):
    code = "invalid"
    status = 400


class NotAuthenticated(DomainError):
    """Credentials that name no active token (a malformed header, a token unknown or revoked)."""

    code = "not_authenticated"
    status = 401


class NotFound(DomainError):
    code = "not_found"
    status = 404


class Conflict(DomainError):
    code = "conflict"
    status = 409


class Gone(DomainError):
    """It was there and is no longer: an expired or revoked share link."""

    code = "gone"
    status = 410


class StaleRevision(DomainError):
    code = "stale_revision"
    status = 412


class PayloadTooLarge(DomainError):
    code = "payload_too_large"
    status = 413


class Forbidden(DomainError):
    code = "forbidden"
    status = 403
