"""The OpenAI Conversations API's input (no database): a conversation's metadata and the items
a request adds, with OpenAI's messages and limits. The API's views (api/openai_conversations.py)
check a request here before calling services.conversations, so a bad one is refused (400, in
OpenAI's error shape) before anything is read or written; the service maps the checked items to
events (contextstore/openai_items.py) and refuses only what needs stored rows (an id the
conversation holds already).
"""

from typing import Any

from contextstore.errors import InvalidInput
from contextstore.openai_items import ITEM_ID_MAX, item_type

MAX_ITEMS_PER_REQUEST = 20
# OpenAI's limits on metadata: 16 pairs, keys of at most 64 characters, string values of at most 512.
METADATA_KEYS, METADATA_KEY_MAX, METADATA_VALUE_MAX = 16, 64, 512


def check_metadata(metadata: Any) -> dict[str, str]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInput("Invalid type for 'metadata': expected an object.", details={"metadata": "object"})
    if len(metadata) > METADATA_KEYS:
        raise InvalidInput(f"Invalid 'metadata': too many properties. Expected at most {METADATA_KEYS}, "
                           f"got {len(metadata)}.", details={"metadata": f"at most {METADATA_KEYS} keys"})
    for key, value in metadata.items():
        if len(key) > METADATA_KEY_MAX or "\x00" in key:
            raise InvalidInput(f"Invalid 'metadata': keys are at most {METADATA_KEY_MAX} characters.",
                               details={"metadata": key[:METADATA_KEY_MAX + 1]})
        if not isinstance(value, str) or len(value) > METADATA_VALUE_MAX:
            raise InvalidInput(f"Invalid 'metadata.{key}': expected a string of at most "
                               f"{METADATA_VALUE_MAX} characters.", details={f"metadata.{key}": "string"})
    return metadata


def check_items(items: Any) -> list[dict[str, Any]]:
    """The items of a request (at most 20), each an object with a type (or a role: a message)
    and, when given, an id of 1 to 200 characters no other item of the request has;
    InvalidInput naming the item for a bad one."""
    if not isinstance(items, list):
        raise InvalidInput("Invalid type for 'items': expected an array.", details={"items": "array"})
    if len(items) > MAX_ITEMS_PER_REQUEST:
        raise InvalidInput(f"Invalid 'items': array too long. Expected at most {MAX_ITEMS_PER_REQUEST} "
                           f"items, got {len(items)}.", details={"items": f"at most {MAX_ITEMS_PER_REQUEST}"})
    ids: set[str] = set()
    for place, item in enumerate(items):
        name = f"items[{place}]"
        if not isinstance(item, dict):
            raise InvalidInput(f"Invalid type for '{name}': expected an object.", details={name: "object"})
        kind = item_type(item)
        if not kind or not isinstance(item.get("type", kind), str):
            raise InvalidInput(f"Missing required parameter: '{name}.type'.",
                               details={f"{name}.type": "required"})
        item_id = item.get("id")
        if item_id is None:
            continue
        if not isinstance(item_id, str) or not item_id or len(item_id) > ITEM_ID_MAX or "\x00" in item_id:
            raise InvalidInput(f"Invalid '{name}.id': expected a string of 1 to {ITEM_ID_MAX} characters.",
                               details={f"{name}.id": "string"})
        if item_id in ids:
            raise InvalidInput(f"Duplicate item found with id {item_id}. Remove duplicate items from "
                               "your input and try again.", details={"items": item_id})
        ids.add(item_id)
    return items
