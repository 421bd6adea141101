"""The agent's document: everything a thread keeps besides its events, as one JSON object.

Pure functions on plain JSON values (no ORM), shared by services/document.py and the migration
that created the document. Revisions are RFC 6902 operations (the `jsonpatch` package) because
the document holds nulls, which an RFC 7386 merge patch cannot set. Every function here keeps
object key order: the stored text of a restored revision must be byte-identical.
"""

import copy
import json
from typing import Any

import json_merge_patch
import jsonpatch
from django.core.serializers.json import DjangoJSONEncoder
from jsonpointer import escape

from contextstore.errors import InvalidInput

# Field name → value of a new thread, in the document's (fixed) key order.
DOCUMENT_DEFAULTS: tuple[tuple[str, Any], ...] = (
    ("state", {}),                     # the agent's state object (AgentScope sub-state inside)
    ("memory", []),                    # clientai memory: a list of objects
    ("summary", ""),                   # the compacted summary (AgentScope setSummary)
    ("last_results", {}),              # clientai step results
    ("conversation_history", []),      # clientai interactions, capped at max_history_size
    ("current_input", None),
    ("original_input", None),
    ("iteration", 0),
    ("max_history_size", 10),
    ("system_prompt", ""),             # peteos slots, readable copies
    ("tool_definitions", None),
    ("extra", {}),                     # framework namespaces (peteos context, fork lineage, ...)
)
DOCUMENT_FIELDS = tuple(name for name, _ in DOCUMENT_DEFAULTS)
MISSING: Any = object()  # a field the document does not have yet


def check_object(name: str, value: Any) -> None:
    """The one shape check of a state (the thread's, a merge patch of it or of a scope, a
    clientai field), made by every door that takes one: a JSON object."""
    if not isinstance(value, dict):
        raise InvalidInput(f"{name} must be a JSON object.", details={name: "must be an object"})


def check_memory(memory: Any) -> None:
    """clientai's memory: a list of objects (the one rule every door that writes it applies)."""
    if not isinstance(memory, list) or not all(isinstance(m, dict) for m in memory):
        raise InvalidInput("memory must be a list of objects.", details={"memory": "list of objects"})


def new_document(**values: Any) -> dict[str, Any]:
    """A complete document in the fixed key order: defaults, overridden by values."""
    unknown = set(values) - set(DOCUMENT_FIELDS)
    if unknown:
        raise KeyError(f"not document fields: {sorted(unknown)}")
    return {name: values[name] if name in values else copy.deepcopy(default)
            for name, default in DOCUMENT_DEFAULTS}


def dumps(value: Any) -> str:
    """The exact text OrderedJSONField stores for value."""
    return json.dumps(value, cls=DjangoJSONEncoder, ensure_ascii=False)


def _path(parent: str, key: str) -> str:
    return f"{parent}/{escape(key)}"


def merge_patch_ops(target: Any, patch: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """RFC 6902 operations doing to `target` what the RFC 7386 `patch` does to it.

    Walks the patch, not the target, so the cost follows the size of the patch. Mirrors
    json_merge_patch.merge: an existing member is replaced in place, a new one goes last, null
    removes, and an object meeting a non-object becomes that object without its nulls.
    """
    ops: list[dict[str, Any]] = []
    for key, value in patch.items():
        where = _path(path, key)
        current = target.get(key, MISSING) if isinstance(target, dict) else MISSING
        if value is None:
            if current is not MISSING:
                ops.append({"op": "remove", "path": where})
        elif isinstance(value, dict) and isinstance(current, dict):
            ops.extend(merge_patch_ops(current, value, where))
        else:
            if isinstance(value, dict):
                value = json_merge_patch.merge({}, copy.deepcopy(value))
            ops.append({"op": "add" if current is MISSING else "replace", "path": where,
                        "value": value})
    return ops


def merge_patch(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """RFC 7386 by the maintained json-merge-patch package, applied in place (no copy of a large
    target): existing members keep their place, new ones go last."""
    merged: dict[str, Any] = json_merge_patch.merge(target, patch)  # the package is untyped
    return merged


def _prefixed(op: dict[str, Any], prefix: str) -> dict[str, Any]:
    op = {**op, "path": prefix + op["path"]}
    if "from" in op:
        op["from"] = prefix + op["from"]
    return op


def field_ops(name: str, old: Any, new: Any) -> list[dict[str, Any]]:
    """Operations turning the document's field `name` from old into new, byte-exact.

    A fine-grained diff (jsonpatch.make_patch) when it reproduces new exactly (it ignores key
    order, so it is checked) and is smaller; otherwise one operation setting the whole field.
    """
    path = _path("", name)
    if old is MISSING:
        return [{"op": "add", "path": path, "value": new}]
    new_text = dumps(new)
    if dumps(old) == new_text:
        return []
    if isinstance(old, dict | list) and type(old) is type(new):
        ops = jsonpatch.make_patch(old, new).patch
        if dumps(jsonpatch.apply_patch(old, ops)) == new_text and len(dumps(ops)) < len(new_text):
            return [_prefixed(op, path) for op in ops]
    return [{"op": "replace", "path": path, "value": new}]


def document_ops(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """Operations turning one whole document into another (restore, migrated revisions)."""
    if list(old) != list(new):  # a different set or order of fields: replace the whole
        return [{"op": "replace", "path": "", "value": new}]
    ops: list[dict[str, Any]] = []
    for name in new:
        ops.extend(field_ops(name, old[name], new[name]))
    return ops


def apply_ops(document: Any, ops: list[dict[str, Any]]) -> Any:
    """Apply stored operations in place (document must be the caller's own copy)."""
    return jsonpatch.apply_patch(document, ops, in_place=True)


def changed_fields(ops: list[dict[str, Any]]) -> list[str]:
    """The document fields a patch touches, in the document's order."""
    if any(op["path"] == "" for op in ops):
        return list(DOCUMENT_FIELDS)
    names = {op["path"].split("/")[1].replace("~1", "/").replace("~0", "~") for op in ops}
    return [n for n in DOCUMENT_FIELDS if n in names] + sorted(names - set(DOCUMENT_FIELDS))



MISSING = object()


def path_changes(old: Any, new: Any, path: str = "$", limit: int = 200) -> list[dict[str, str]]:
    """What differs between two JSON values, one row per JSON path (`$.plan[1]`): the old and
    new value as compact JSON, "" where a side has none. Objects and lists are walked, anything
    else compared whole; at most `limit` rows."""
    out: list[dict[str, str]] = []

    def show(v: Any) -> str:
        return "" if v is MISSING else json.dumps(v, ensure_ascii=False, sort_keys=True)[:500]

    def walk(a: Any, b: Any, at: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for k in list(a) + [k for k in b if k not in a]:
                key = f"{at}.{k}" if isinstance(k, str) and k.isidentifier() else f"{at}[{json.dumps(k)}]"
                walk(a.get(k, MISSING), b.get(k, MISSING), key)
        elif isinstance(a, list) and isinstance(b, list):
            for i in range(max(len(a), len(b))):
                walk(a[i] if i < len(a) else MISSING, b[i] if i < len(b) else MISSING, f"{at}[{i}]")
        elif a is MISSING or b is MISSING or dumps(a) != dumps(b):
            kind = "added" if a is MISSING else "removed" if b is MISSING else "changed"
            out.append({"path": at, "old": show(a), "new": show(b), "kind": kind})

    walk(old, new, path)
    return out
