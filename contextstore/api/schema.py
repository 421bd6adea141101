"""The OpenAPI document states what the server enforces and answers (issue 27): every operation
documents the error shape it can answer with, and the request schemas carry the rules DRF's
fields enforce beyond drf-spectacular's mapping (names and ids refuse NUL) and each input
serializer's own cross-field rules (`schema_rules`: JSON Schema keywords written beside the
serializer's validate(), e.g. "one of count or max_tokens")."""

from typing import Any

from django.core.validators import ProhibitNullCharactersValidator
from drf_spectacular import openapi
from drf_spectacular.plumbing import force_instance
from rest_framework import serializers

# DRF's CharField refuses U+0000 (ProhibitNullCharactersValidator); agent text (AgentText) keeps it.
NO_NUL = "^[^\\u0000]*$"


def _refuses_nul(field: Any) -> bool:
    return any(isinstance(v, ProhibitNullCharactersValidator) for v in field.validators)


def _add_no_nul(field: Any, schema: dict[str, Any]) -> None:
    """The NUL rule on a string field's schema (inside drf-spectacular's blank-or-pattern
    oneOf when blank is allowed) and on a list of such strings' items."""
    if isinstance(field, serializers.ListField):
        if isinstance(schema.get("items"), dict):
            _add_no_nul(field.child, schema["items"])
        return
    if not isinstance(field, serializers.CharField) or not _refuses_nul(field):
        return
    if "oneOf" in schema:  # allow_blank with a pattern or minLength: [the rule, ""]
        schema["oneOf"][0].setdefault("pattern", NO_NUL)
    elif schema.get("type") == "string" and "enum" not in schema:
        schema.setdefault("pattern", NO_NUL)  # which "" matches: blank stays allowed


class AutoSchema(openapi.AutoSchema):
    def _map_basic_serializer(self, serializer: Any, direction: str) -> Any:
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request":
            for name, prop in schema.get("properties", {}).items():
                field = serializer.fields.get(name)
                if field is not None and "$ref" not in prop:
                    _add_no_nul(field, prop)
        return schema

    def _map_serializer(self, serializer: Any, direction: str, bypass_extensions: bool = False) -> Any:
        schema = super()._map_serializer(serializer, direction, bypass_extensions)
        rules = getattr(force_instance(serializer), "schema_rules", None)
        if direction == "request" and rules:
            for key, value in rules.items():
                if key == "properties":  # more on some of the fields' own schemas
                    for name, more in value.items():
                        schema["properties"][name].update(more)
                else:
                    schema[key] = value
        return schema


class ObjectListSchema(AutoSchema):
    """For a ViewSet whose `list` answers one object ({results, next_cursor, …}, a sync load),
    not a bare array; its other actions keep the usual rules (many=True is an array)."""

    def _is_list_view(self, serializer: Any = None) -> bool:
        return getattr(self.view, "action", None) != "list" and super()._is_list_view(serializer)


# api.common.if_match_revision's forms: "3", 3, W/"3" or *.
IF_MATCH_PATTERN = '^(\\*|(W/)?[0-9]{1,18}|(W/)?"[0-9]{1,18}")$'
# selectors.agent_sessions.data_contains_q: a non-empty object of plain names, nested as deep as
# wanted; a leaf is any other value.
# OpenAPI 3.0 has no patternProperties or propertyNames: the key rule is in the description.
DATA_CONTAINS = {
    "type": "object", "minProperties": 1,
    "description": "Keys are plain names: letters and digits (any script), '-' and single "
                   "'_' (no '__').",
    # The key rule, machine-readable (OpenAPI 3.0 has no propertyNames): an ECMA 262 pattern
    # in Unicode mode; tests/test_schemathesis.py steers generated keys by it.
    "x-key-pattern": "^(?!.*__)[\\p{L}\\p{N}_-]+$",
    "additionalProperties": {"oneOf": [
        {"$ref": "#/components/schemas/DataContains"},
        {"not": {"type": "object", "minProperties": 1}},
    ]},
}
# Query parameters whose value is a JSON document (a parameter's `content`, not its `schema`).
JSON_QUERY = {("/api/v1/agent-sessions/read/", "data_contains"): "DataContains"}

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
    "503": "The database is unavailable for a moment (`database_unavailable`); retry after Retry-After.",
}


def _no_nul_text(schema: dict[str, Any]) -> None:
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        schema = schema["items"]
    if schema.get("type") == "string" and not {"pattern", "enum", "format"} & set(schema):
        schema["pattern"] = NO_NUL


def _has_rules(schemas: dict[str, Any], schema: dict[str, Any]) -> bool:
    """Whether a body schema requires something, so an empty body is refused."""
    if "$ref" in schema:
        schema = schemas.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return bool({"required", "anyOf", "oneOf", "allOf"} & set(schema))


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool,
                        **kwargs: Any) -> dict[str, Any]:
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = ERROR_SCHEMA
    schemas["DataContains"] = DATA_CONTAINS
    ref = {"$ref": "#/components/schemas/Error"}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "header" and parameter["name"] == "If-Match":
                    parameter["schema"]["pattern"] = IF_MATCH_PATTERN
                if parameter["in"] in ("query", "path"):  # api.guard refuses NUL in them all
                    _no_nul_text(parameter.get("schema", {}))
                component = JSON_QUERY.get((path, parameter["name"]))
                if component:
                    parameter.pop("schema")
                    parameter["content"] = {
                        "application/json": {"schema": {"$ref": f"#/components/schemas/{component}"}}}
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body and (path.endswith("/summarizer/") or _has_rules(schemas, body["schema"])):
                operation["requestBody"]["required"] = True  # an empty body is {} (or nothing)
            codes = ["400", "401", "404", "429", "503"]
            if method != "get":
                codes += ["403", "409", "413"]
            conditional = any(p["name"] == "If-Match" for p in operation.get("parameters", []))
            if conditional or path.endswith("/sync/") and method == "post":
                codes.append("412")
            responses = operation.setdefault("responses", {})
            for code in codes:
                responses.setdefault(code, {
                    "description": DESCRIPTIONS[code],
                    "content": {"application/json": {"schema": ref}},
                })
    return result
