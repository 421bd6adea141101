"""A JSON object whose last member is a long list, written a batch of items at a time.

`json_object_chunks(head, "events", items, dumps=d, indent=i)` yields bytes that join to
exactly `d({**head, "events": list(items)})`, for the two shapes the exports use: compact
(`indent=None`, as the API's renderer writes) and indented (as `JsonResponse(..., indent=2)`).
Only one batch of items is held at a time. `dumps` must write objects with their keys in order
and, when indenting, use json's usual separators (",", ": "); JSON text never holds a raw
newline inside a string, so an item is indented by prefixing each of its lines.
"""

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

BATCH = 500


def json_object_chunks(
    head: dict[str, Any], key: str, items: Iterable[Any], *, dumps: Callable[[Any], bytes],
    indent: int | None = None, batch: int = BATCH,
) -> Iterator[bytes]:
    if not head or key in head:
        raise ValueError("head must be a non-empty object without the streamed key")
    opening = dumps(head)
    iterator = iter(items)
    first = list(islice(iterator, batch))
    if indent is None:
        yield opening[:-1] + b"," + dumps(key) + b":["
        separator, closing = b",", b"]}"
    else:
        # '{\n  "a": 1\n}' -> '{\n  "a": 1' + ',\n  "key": [' + items + '\n  ]\n}'
        pad = b" " * indent
        yield opening[: -len(b"\n}")] + b",\n" + pad + dumps(key) + b": " + (b"[" if first else b"[]")
        if not first:
            yield b"\n}"
            return
        separator, closing = b",\n", b"\n" + pad + b"]\n}"
    lead = b"" if indent is None else b"\n"
    while first:
        yield lead + separator.join(_item(dumps(item), indent) for item in first)
        lead = separator
        first = list(islice(iterator, batch))
    yield closing


def _item(text: bytes, indent: int | None) -> bytes:
    if indent is None:
        return text
    pad = b" " * (indent * 2)
    return b"\n".join(pad + line for line in text.split(b"\n"))
