"""The one definition of an incoming context block (Nooa's named block): its name, a fixed
value or a live expression, its placement and order. Every door that writes a block checks it
here before calling services.blocks (the API's BlockInSerializer, the dashboard's BlockForm,
the admin's ContextBlockForm, an import's blocks), so each refuses a bad block with the same
message and details and the service only writes.
"""

from collections.abc import Mapping
from typing import Any

from django.conf import settings

from contextstore.errors import InvalidInput
from contextstore.expressions import compile_expr
from contextstore.fields import NUL_IN_NAME
from contextstore.models import ContextBlock

# A block is addressed by its name as one URL path segment (/threads/{id}/blocks/{name}/):
# servers decode %2F before routing, so a name holding "/" could never be read, changed or
# restored through the API. Every door that creates a block refuses it.
NAME_RULE = 'a block name is one URL path segment, so it cannot contain "/"'
BLOCK_FIELDS = ("value", "expr", "placement", "order")


def check_block_name(name: Any) -> str:
    if not isinstance(name, str) or not name or len(name) > 200:
        raise InvalidInput("name is required (at most 200 characters).", details={"name": "invalid"})
    if "\x00" in name:
        raise InvalidInput(f"name: {NUL_IN_NAME}.", details={"name": NUL_IN_NAME})
    if "/" in name:
        raise InvalidInput(f"name {name!r}: {NAME_RULE}.", details={"name": NAME_RULE})
    return name


def check_block(name: Any, given: Mapping[str, Any]) -> None:
    """Refuse a block that no door may write. `given` holds the fields sent (any of
    BLOCK_FIELDS); a field left out keeps what the block holds."""
    check_block_name(name)
    value, expr = given.get("value"), given.get("expr")
    if value is not None and expr is not None:
        raise InvalidInput("Give a fixed value or an expr, not both.", details={"expr": "not with value"})
    if value is not None and not isinstance(value, str):
        raise InvalidInput("value must be a string or null.", details={"value": "must be a string"})
    if expr is not None:
        if not isinstance(expr, str):
            raise InvalidInput("expr must be a string.", details={"expr": "must be a string"})
        compile_expr(expr)
    if "placement" in given and given["placement"] not in ContextBlock.Placement.values:
        raise InvalidInput("placement is prefix or suffix.", details={"placement": given["placement"]})
    order = given.get("order", 0)
    if not isinstance(order, int) or isinstance(order, bool) or not -(2**31) <= order < 2**31:
        raise InvalidInput("order must be a 32-bit integer.", details={"order": "must be an integer"})
    limit = settings.CONTEXTSTORE["BLOCK_MAX_CHARS"]
    for field, text in (("value", value), ("expr", expr)):
        if isinstance(text, str) and len(text) > limit:
            raise InvalidInput(f"{field} is longer than {limit} characters.", details={field: "too long"})
