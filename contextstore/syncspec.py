"""The shape of a framework sync (GET and POST /threads/{id}/sync/, services/sync.py): the
namespace, the load's format, and a save's parts, items, removals and document fields, checked
whole at the door before the service takes a lock. Each item's event is eventspec's, built by
the service after redaction, as every door that takes events does.

No database: what needs the thread (a stale base, an upload's missing parts, a key named again
by an earlier part) stays the service's.
"""

from typing import Any

from django.conf import settings

from contextstore.documents import check_memory, check_object
from contextstore.errors import InvalidInput, PayloadTooLarge
from contextstore.fields import NUL_IN_NAME

NAMESPACE_MAX = 64
KEY_MAX = 200 - NAMESPACE_MAX - 1
UPLOAD_ID_MAX = 64


def check_namespace(namespace: Any) -> str:
    if (not isinstance(namespace, str) or not namespace or len(namespace) > NAMESPACE_MAX
            or not all(c.isalnum() or c in "._-" for c in namespace)):  # "-" alone too
        raise InvalidInput("namespace is required: letters, digits, . _ - (at most 64).",
                           details={"namespace": namespace})
    return namespace


def check_load(namespace: Any, format: Any) -> None:
    """A load's query: the namespace, and format peteos or none."""
    check_namespace(namespace)
    if format not in (None, "", "peteos"):
        raise InvalidInput("format must be peteos or absent.", details={"format": format})


def check_key(key: Any, where: str) -> str:
    if not isinstance(key, str) or not key or len(key) > KEY_MAX:
        raise InvalidInput(f"{where}: a key is a non-empty string of at most {KEY_MAX} characters.",
                           details={where: key})
    if "\x00" in key:
        raise InvalidInput(f"{where}: {NUL_IN_NAME}.", details={where: NUL_IN_NAME})
    return key


def check_items(items: Any) -> None:
    """The items of one part: a list of {key, event}, each key once, no event naming its own
    client_id (the key identifies it)."""
    if not isinstance(items, list):
        raise InvalidInput("items must be a list.", details={"items": "list"})
    seen: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict) or set(item) - {"key", "event"}:
            raise InvalidInput(f"items[{i}] must be an object with key and event.",
                               details={f"items[{i}]": "{key, event}"})
        key = check_key(item.get("key"), f"items[{i}].key")
        raw = item.get("event")
        if isinstance(raw, dict) and "client_id" in raw:
            raise InvalidInput(f"items[{i}].event.client_id: the key identifies a synced item.",
                               details={f"items[{i}].event.client_id": "not allowed"})
        if key in seen:
            raise InvalidInput(f"items[{i}].key {key!r} appears twice in one save.",
                               details={f"items[{i}].key": key})
        seen.add(key)


def check_removed(removed: Any) -> None:
    if removed is None:
        return
    if not isinstance(removed, list):
        raise InvalidInput("removed must be a list of keys.", details={"removed": "list"})
    for i, key in enumerate(removed):
        check_key(key, f"removed[{i}]")


def check_save(data: dict[str, Any]) -> None:
    """A save's body (one part), as the API takes it: every rule but the event's (eventspec,
    after redaction) and those that need the thread."""
    check_namespace(data.get("namespace"))
    base_revision = data.get("base_revision")
    if base_revision is not None and (not isinstance(base_revision, int)
                                      or isinstance(base_revision, bool) or base_revision < 0):
        raise InvalidInput("base_revision must be a revision number or null.",
                           details={"base_revision": base_revision})
    upload_id = data.get("upload_id")
    if upload_id is not None and (not isinstance(upload_id, str)
                                  or not 0 < len(upload_id) <= UPLOAD_ID_MAX):
        raise InvalidInput("upload_id must be a string of at most 64 characters.",
                           details={"upload_id": upload_id})
    part, parts = data.get("part", 0), data.get("parts", 1)
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (part, parts)) or not (
            0 <= part < parts):
        raise InvalidInput("part must be 0 ≤ part < parts.", details={"part": part, "parts": parts})
    if parts > 1 and upload_id is None:
        raise InvalidInput("A save in several parts needs an upload_id.",
                           details={"upload_id": "required"})
    items = [] if data.get("items") is None else data["items"]
    removed = [] if data.get("removed") is None else data["removed"]
    limit = settings.CONTEXTSTORE["MAX_EVENTS_PER_BATCH"]
    if (len(items) if isinstance(items, list) else 0) + (
            len(removed) if isinstance(removed, list) else 0) > limit:
        raise PayloadTooLarge(
            f"At most {limit} items and removals per request; send the rest as further parts "
            "of the same upload.", details={"items": f"at most {limit} per part"})
    check_items(items)
    check_removed(removed)
    for name in ("state", "last_results"):
        if name in data:
            check_object(name, data[name])
    if "summary" in data and not isinstance(data["summary"], str):
        raise InvalidInput("summary must be a string.", details={"summary": "string"})
    if "memory" in data:
        check_memory(data["memory"])
