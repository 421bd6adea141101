"""The one definition of the long-term store's ops (get, put, move, search, list_namespaces,
sweep),
the shapes of the client's `store_batch` (docs/api.md, "Long-term store"). The API's
POST /api/v1/store/batch/ checks a batch here before calling services.store.store_batch, which
only runs checked ops: a bad op is refused (400, naming it and its field) before anything is
read or written.
"""

from typing import Any

from contextstore import vectors
from contextstore.errors import InvalidInput
from contextstore.models.store import SEPARATOR, namespace_path

LABEL_MAX = 200
PATH_MAX = 2000
KEY_MAX = 1000
ROW_BYTES = 2400  # namespace + key in the unique index (PostgreSQL's btree takes ~2,700)
LIMIT_MAX = 10_000
BATCH_MAX = 1_000
OPS = {
    "get": {"op", "namespace", "key", "refresh_ttl", "omit_expired"},
    "put": {"op", "namespace", "key", "value", "index", "ttl", "vectors"},
    "move": {"op", "namespace", "key", "new_key"},
    "search": {"op", "namespace_prefix", "filter", "query", "query_vector", "distance", "limit",
               "offset", "refresh_ttl", "omit_expired"},
    "list_namespaces": {"op", "prefix", "suffix", "max_depth", "limit", "offset", "omit_expired"},
    "sweep": {"op", "namespace_prefix"},
}
FILTER_OPERATORS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}


class _Bad(Exception):
    def __init__(self, field: str, message: str):
        self.field, self.message = field, message


def _labels(value: Any, field: str, *, empty: bool) -> list[str]:
    # "*" is a label like any other; only list_namespaces reads it as a wildcard
    if not isinstance(value, list) or (not value and not empty):
        raise _Bad(field, "must be a non-empty list of strings" if not empty else "must be a list of strings")
    for label in value:
        if not isinstance(label, str) or not label:
            raise _Bad(field, "labels must be non-empty strings")
        if len(label) > LABEL_MAX:
            raise _Bad(field, f"labels are at most {LABEL_MAX} characters")
        if "\x00" in label or SEPARATOR in label:
            raise _Bad(field, "labels cannot hold U+0000 or U+001F")
    if len(namespace_path(value)) > PATH_MAX:
        raise _Bad(field, f"the namespace is longer than {PATH_MAX} characters")
    return list(value)


def _key(value: Any, field: str = "key") -> str:
    if not isinstance(value, str) or not value:
        raise _Bad(field, "must be a non-empty string")
    if len(value) > KEY_MAX:
        raise _Bad(field, f"at most {KEY_MAX} characters")
    if "\x00" in value:
        raise _Bad(field, "cannot hold NUL characters (U+0000)")
    return value


def _bool(op: dict[str, Any], field: str, default: bool) -> bool:
    value = op.get(field, default)
    if not isinstance(value, bool):
        raise _Bad(field, "must be true or false")
    return value


def _int(op: dict[str, Any], field: str, default: int | None, *, minimum: int,
         maximum: int | None = None) -> int | None:
    value = op.get(field)
    if value is None:  # absent or null: the default
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum \
            or (maximum is not None and value > maximum):
        raise _Bad(field, f"must be an integer from {minimum}" + (f" to {maximum}" if maximum else ""))
    return value


def _fields(value: Any) -> list[str] | None:
    """The put's `index`: None (the default: the whole value), False (not indexed: []), or
    field paths."""
    if value is None:
        return None
    if value is False:
        return []
    if not isinstance(value, list) or not all(isinstance(f, str) and f for f in value):
        raise _Bad("index", "must be null, false or a list of field paths")
    return list(value)


def check_op(i: int, op: Any) -> dict[str, Any]:
    """One op, checked, its defaults filled in; InvalidInput naming it and its field."""
    try:
        if not isinstance(op, dict):
            raise _Bad("op", "each op must be a JSON object")
        kind = op.get("op")
        if not isinstance(kind, str) or kind not in OPS:
            raise _Bad("op", f"must be one of {', '.join(OPS)}")
        unknown = set(op) - OPS[kind]
        if unknown:
            raise _Bad(sorted(unknown)[0], f"unknown field of a {kind} op")
        out: dict[str, Any] = {"op": kind}
        if kind in ("get", "put", "move"):
            out["namespace"] = _labels(op.get("namespace"), "namespace", empty=False)
            out["key"] = _key(op.get("key"))
            for field in ("key", "new_key"):
                key = op.get(field, "")
                row = namespace_path(out["namespace"]) + (key if isinstance(key, str) else "")
                if len(row.encode()) > ROW_BYTES:
                    raise _Bad(field, f"the namespace and the key together are at most {ROW_BYTES:,} "
                                      "bytes (UTF-8)")
        if kind in ("get", "search", "list_namespaces"):
            # False: an item past its TTL stays readable until a sweep (beat's, or a sweep op)
            # turns it into a deleted version (LangGraph's TTLConfig.omit_expired, off unless set
            # there: the LangGraph adapter sends it); true by default here
            out["omit_expired"] = _bool(op, "omit_expired", True)
        if kind == "get":
            out["refresh_ttl"] = _bool(op, "refresh_ttl", True)
        elif kind == "put":
            if "value" not in op:
                raise _Bad("value", "required (null deletes)")
            value = op["value"]
            if value is not None and not isinstance(value, dict):
                raise _Bad("value", "must be a JSON object, or null to delete")
            out["value"] = value
            out["index"] = _fields(op.get("index"))
            ttl = op.get("ttl")
            if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float))
                                    or not 0 < ttl < 10**9):
                raise _Bad("ttl", "must be a positive number of minutes, or null")
            out["ttl"] = ttl
            out["vectors"] = _vectors(op.get("vectors"))
        elif kind == "move":
            out["new_key"] = _key(op.get("new_key"), "new_key")
        if kind in ("search", "sweep"):
            out["namespace_prefix"] = _labels(op.get("namespace_prefix", []), "namespace_prefix",
                                              empty=True)
        if kind == "search":
            flt = op.get("filter")
            if flt is not None and not isinstance(flt, dict):
                raise _Bad("filter", "must be a JSON object or null")
            _check_filter(flt or {})
            out["filter"] = flt or None
            query = op.get("query")
            if query is not None and not isinstance(query, str):
                raise _Bad("query", "must be a string or null")
            out["query"] = query or None
            qv = op.get("query_vector")
            if qv is not None and vectors.check_vector(qv) is None:
                raise _Bad("query_vector", "must be a non-empty list of finite numbers")
            out["query_vector"] = vectors.check_vector(qv) if qv is not None else None
            distance = op.get("distance", "cosine")
            if distance not in vectors.DISTANCES:
                raise _Bad("distance", f"must be one of {', '.join(vectors.DISTANCES)}")
            out["distance"] = distance
            out["limit"] = _int(op, "limit", 10, minimum=0, maximum=LIMIT_MAX)
            out["offset"] = _int(op, "offset", 0, minimum=0)
            out["refresh_ttl"] = _bool(op, "refresh_ttl", True)
        elif kind == "list_namespaces":
            for field in ("prefix", "suffix"):
                value = op.get(field)
                out[field] = None if value is None else _labels(value, field, empty=True)
            out["max_depth"] = _int(op, "max_depth", None, minimum=1)
            out["limit"] = _int(op, "limit", 100, minimum=0, maximum=LIMIT_MAX)
            out["offset"] = _int(op, "offset", 0, minimum=0)
        return out
    except _Bad as bad:
        raise InvalidInput(f"ops[{i}].{bad.field}: {bad.message}.",
                           details={"ops": {str(i): {bad.field: bad.message}}}) from None


def _vectors(value: Any) -> dict[str, list[float]] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not value:
        raise _Bad("vectors", "must be an object of field path to vector, or null")
    out: dict[str, list[float]] = {}
    for field, vector in value.items():
        checked = vectors.check_vector(vector)
        if not field or len(field) > 200 or checked is None:
            raise _Bad("vectors", "each vector must be a non-empty list of finite numbers under "
                                  "a field path of at most 200 characters")
        out[field] = checked
    return out


def _check_filter(flt: dict[str, Any]) -> None:
    """LangGraph's filter: item keys to values, nested objects and lists, and operator objects
    (every key an operator, as InMemoryStore reads an object with any "$" key below the top)."""
    for key, value in flt.items():
        _check_key(key)
        _check_value(value, 1)


def _check_key(key: str) -> None:
    if '"' in key:  # SQLite's JSON path cannot name such a key
        raise _Bad("filter", "a key cannot hold a double quote")


def _check_value(value: Any, depth: int, *, operand: bool = False) -> None:
    if depth > 32:
        raise _Bad("filter", "nests more than 32 levels")
    if isinstance(value, list):
        for member in value:
            _check_value(member, depth + 1, operand=operand)
    if not isinstance(value, dict):
        return
    operators = [] if operand else [k for k in value if k.startswith("$")]
    if operators and len(operators) < len(value):
        raise _Bad("filter", "an object with an operator holds operators only")
    for key, member in value.items():
        if operators and key not in FILTER_OPERATORS:
            raise _Bad("filter", f"unknown operator {key} (one of "
                                 f"{', '.join(sorted(FILTER_OPERATORS))})")
        if not operators:
            _check_key(key)
        _check_value(member, depth + 1, operand=operand or bool(operators))


def check_ops(ops: Any) -> list[dict[str, Any]]:
    """A batch's ops, each checked (`check_op`), in order."""
    if not isinstance(ops, list):
        raise InvalidInput("ops must be a list of ops.", details={"ops": "must be a list"})
    if len(ops) > BATCH_MAX:
        raise InvalidInput(f"at most {BATCH_MAX} ops in one batch.",
                           details={"ops": f"at most {BATCH_MAX}"})
    return [check_op(i, op) for i, op in enumerate(ops)]
