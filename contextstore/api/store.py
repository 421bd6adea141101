"""POST /store/batch/: the long-term store's one door (ops checked by storespec.py, run by
services/store.py)."""

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from contextstore.api.common import actor_of, body, token_of
from contextstore.api.serializers import JSONObject
from contextstore.models import ApiToken
from contextstore.services import store
from contextstore.storespec import BATCH_MAX, LIMIT_MAX, check_ops

READS = {"get", "search", "list_namespaces"}

OPS_HELP = """Each op is one of:
- `{"op": "get", "namespace": [...], "key": str, "refresh_ttl": true, "omit_expired": true}` ->
  the item or null (`omit_expired: false`: an item past its TTL that is not swept yet is read);
- `{"op": "put", "namespace": [...], "key": str, "value": {...} | null, "index": null | false |
  [field paths], "ttl": minutes | null, "vectors": {field path: [numbers]} | null}` -> null
  (a null value deletes; deleting a missing item is no error);
- `{"op": "move", "namespace": [...], "key": str, "new_key": str}` -> the moved item, or null
  when there is none (409 for the whole batch when new_key is taken);
- `{"op": "search", "namespace_prefix": [...], "filter": {...}, "query": str, "query_vector":
  [numbers], "distance": "cosine" | "inner_product" | "l2", "limit": 10, "offset": 0,
  "refresh_ttl": true, "omit_expired": true}` -> items, each with `score`;
- `{"op": "list_namespaces", "prefix": [...], "suffix": [...], "max_depth": int, "limit": 100,
  "offset": 0, "omit_expired": true}` -> namespaces (lists of labels; "*" in prefix or suffix
  matches any label);
- `{"op": "sweep", "namespace_prefix": [...]}` -> the count of items past their TTL under the
  prefix that it turns into deleted versions (undoable), as beat's sweep does.
A namespace is a non-empty list of labels (non-empty strings without U+0000 or U+001F)."""

# What the schema promises of an op: a part of what storespec accepts, so that every request the
# schema calls valid is accepted (a client drawing from it, schemathesis included): labels of at
# most 100 characters, 4 of them at most, keys of at most 150 (so the row fits the index whatever
# the characters' UTF-8 length); storespec takes more, and a put's `vectors` and `index: false`
# (OPS_HELP), which OpenAPI 3.0 cannot state beside the rest.
_LABEL = {"type": "string", "minLength": 1, "maxLength": 100, "pattern": "^[^\\u0000\\u001f]+$"}
_NAMESPACE = {"type": "array", "items": _LABEL, "minItems": 1, "maxItems": 4}
_PREFIX = {"type": "array", "items": _LABEL, "maxItems": 4}
_KEY = {"type": "string", "minLength": 1, "maxLength": 150, "pattern": "^[^\\u0000]+$"}
_VECTOR = {"type": "array", "minItems": 1, "maxItems": 64,
           "items": {"type": "number", "minimum": -1e6, "maximum": 1e6}}
_PAGE = {"limit": {"type": "integer", "minimum": 0, "maximum": LIMIT_MAX},
         "offset": {"type": "integer", "minimum": 0, "maximum": 10**9}}


def _op(name: str, required: list[str], **properties: dict) -> dict:
    return {"type": "object", "additionalProperties": False, "required": ["op", *required],
            "properties": {"op": {"type": "string", "enum": [name]}, **properties}}


OP_SCHEMA = {"oneOf": [  # OpenAPI 3.0: `nullable`, no list of types
    _op("get", ["namespace", "key"], namespace=_NAMESPACE, key=_KEY, refresh_ttl={"type": "boolean"},
        omit_expired={"type": "boolean"}),
    _op("put", ["namespace", "key", "value"], namespace=_NAMESPACE, key=_KEY,
        value={"type": "object", "nullable": True, "additionalProperties": {}},
        index={"type": "array", "nullable": True, "items": {"type": "string", "minLength": 1}},
        ttl={"type": "number", "nullable": True, "minimum": 0.001, "maximum": 10**8}),
    _op("move", ["namespace", "key", "new_key"], namespace=_NAMESPACE, key=_KEY, new_key=_KEY),
    _op("search", [], namespace_prefix=_PREFIX,
        filter={"type": "object", "nullable": True, "additionalProperties": {
            "oneOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]}},
        query={"type": "string", "nullable": True}, query_vector={**_VECTOR, "nullable": True},
        distance={"type": "string", "enum": ["cosine", "inner_product", "l2"]},
        refresh_ttl={"type": "boolean"}, omit_expired={"type": "boolean"}, **_PAGE),
    _op("list_namespaces", [], prefix={**_PREFIX, "nullable": True},
        suffix={**_PREFIX, "nullable": True}, omit_expired={"type": "boolean"},
        max_depth={"type": "integer", "nullable": True, "minimum": 1, "maximum": 100}, **_PAGE),
    _op("sweep", [], namespace_prefix=_PREFIX),
]}


@extend_schema_field(OP_SCHEMA)
class StoreOp(JSONObject):
    """One op of a batch (storespec.check_op is its parser)."""


class StoreBatchInSerializer(serializers.Serializer):
    ops = serializers.ListField(child=StoreOp(), max_length=BATCH_MAX, help_text=OPS_HELP)


class StoreBatchResultSerializer(serializers.Serializer):
    results = serializers.ListField(
        child=serializers.JSONField(),
        help_text="One per op, in order: an item ({namespace, key, value, created_at, updated_at, "
                  "version, expires_at}), null, a list of items, a list "
                  "of namespaces, or a count (sweep).")


class StoreScope(BasePermission):
    """Any active token may read (get, search, list_namespaces); put, move and sweep need write
    scope."""

    message = "This token has read scope; put, move and sweep need a token with write scope."
    code = "scope"

    def has_permission(self, request: Request, view: Any) -> bool:
        token = request.auth
        if not isinstance(token, ApiToken):
            return False
        if token.can_write:
            return True
        ops = request.data.get("ops") if isinstance(request.data, dict) else None
        return isinstance(ops, list) and all(
            isinstance(op, dict) and isinstance(op.get("op"), str) and op["op"] in READS for op in ops)


class StoreBatchView(APIView):
    permission_classes = [StoreScope]

    @extend_schema(
        tags=["store"], request=StoreBatchInSerializer,
        responses={200: StoreBatchResultSerializer},
        summary="Run a batch of long-term store ops in one transaction (results in order)",
        examples=[OpenApiExample("put then search", request_only=True, value={"ops": [
            {"op": "put", "namespace": ["memories", "ann"], "key": "diet",
             "value": {"text": "Ann is vegetarian"}},
            {"op": "search", "namespace_prefix": ["memories"], "query": "vegetarian"}]})],
    )
    def post(self, request: Request) -> Response:
        data = body(request)  # other members are ignored, as every other endpoint ignores them
        ops = check_ops(data.get("ops"))  # a bad op: 400 before anything is read or written
        results = store.store_batch(workspace=token_of(request).workspace, ops=ops, actor=actor_of(request))
        return Response({"results": results})
