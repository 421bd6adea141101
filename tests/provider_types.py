"""The providers' own request types (the official `openai` and `anthropic` packages), used to
check that format=openai|anthropic renders are requests those APIs accept.

The SDKs declare message params as TypedDicts whose lists are `Iterable[...]`, which pydantic
validates lazily: `_drain` walks the result so every nested block is validated too. Unknown
keys are refused (extra="forbid"), as the APIs refuse them. Ordering rules the types cannot
express (tool results right after their calls, alternating turns, a user message first,
thinking only with the assistant message it belongs to) are checked here as well.
"""

from collections.abc import Iterable
from typing import Any

from anthropic.types import MessageParam, TextBlockParam
from openai.types.chat import ChatCompletionMessageParam
from pydantic import ConfigDict, TypeAdapter

OPENAI = TypeAdapter(list[ChatCompletionMessageParam], config=ConfigDict(extra="forbid"))
ANTHROPIC = TypeAdapter(list[MessageParam], config=ConfigDict(extra="forbid"))
ANTHROPIC_SYSTEM = TypeAdapter(list[TextBlockParam], config=ConfigDict(extra="forbid"))


def _drain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drain(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)) or value is None:
        return value
    if isinstance(value, Iterable):
        return [_drain(v) for v in value]
    return value


def assert_openai_request(messages: list[dict]) -> None:
    _drain(OPENAI.validate_python(messages))
    talk = [m for m in messages if m["role"] not in ("system", "developer")]
    assert not talk or talk[0]["role"] == "user", f"history opens with {talk[0]['role']}"
    pending: list[str] = []
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            assert pending and m["tool_call_id"] == pending[0], f"orphan tool message at {i}"
            pending.pop(0)
            continue
        assert not pending, f"tool calls {pending} not answered before message {i}"
        if m["role"] == "assistant" and m.get("tool_calls"):
            assert len(m["tool_calls"]) > 0
            pending = [c["id"] for c in m["tool_calls"]]
    assert not pending, f"tool calls {pending} never answered"


def assert_anthropic_request(system: list[dict], messages: list[dict]) -> None:
    _drain(ANTHROPIC_SYSTEM.validate_python(system))
    _drain(ANTHROPIC.validate_python(messages))
    open_ids: set[str] = set()
    if messages:
        assert messages[0]["role"] == "user" and messages[0]["content"][0]["type"] == "text", \
            "history opens with a user message"
    for i, m in enumerate(messages):
        if i:
            assert m["role"] != messages[i - 1]["role"], f"turn {i} repeats role {m['role']}"
        blocks = m["content"]
        assert blocks, f"turn {i} is empty"
        kinds = [b["type"] for b in blocks]
        thought = [n for n, k in enumerate(kinds) if k in ("thinking", "redacted_thinking")]
        if thought:  # thinking comes with the text or tool calls it led to, in the same turn
            assert m["role"] == "assistant", f"thinking in {m['role']} turn {i}"
            assert any(k in ("text", "tool_use") for k in kinds[thought[-1]:]), \
                f"turn {i} holds thinking without its message: {kinds}"
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        assert set(results) == open_ids, f"turn {i} answers {results}, open {open_ids}"
        if results:
            assert all(b["type"] == "tool_result" for b in blocks[:len(results)]), \
                "tool_result blocks come first"
        open_ids = {b["id"] for b in blocks if b["type"] == "tool_use"}
        for b in blocks:
            if b["type"] == "text":
                assert b["text"], f"empty text block in turn {i}"
    assert not open_ids, f"tool_use {open_ids} never answered"
