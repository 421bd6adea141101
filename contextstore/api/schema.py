"""OpenAPI post-processing: every operation documents the error shape it can answer with."""

from typing import Any

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "details"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "details": {"type": "object", "additionalProperties": {}},
            },
        }
    },
}
DESCRIPTIONS = {
    "400": "Invalid input; `details` names the fields.",
    "401": "Missing or invalid API token.",
    "403": "The token's scope does not allow this.",
    "404": "No such object in this workspace.",
    "409": "Conflict (idempotency key reused with another payload, name taken, ...).",
    "412": "Stale revision: the If-Match revision is not the current one.",
    "413": "Payload too large (body size, events per batch, content size).",
    "429": "Throttled; see Retry-After.",
}


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool,
                        **kwargs: Any) -> dict[str, Any]:
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"$ref": "#/components/schemas/Error"}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            codes = ["400", "401", "404", "429"]
            if method != "get":
                codes += ["403", "409", "413"]
            if "/state" in path:
                codes.append("412")
            responses = operation.setdefault("responses", {})
            for code in codes:
                responses.setdefault(code, {
                    "description": DESCRIPTIONS[code],
                    "content": {"application/json": {"schema": ref}},
                })
    return result
