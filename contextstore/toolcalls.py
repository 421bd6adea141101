"""Where an event keeps its tool calls and tool-result links, read one way everywhere.

Frameworks put them in different places: content parts (`tool_use` as peteos/Anthropic,
`tool_call`/`function_call` as the demo and OpenAI-style agents) or `data`
(`{"name": .., "arguments": .., "id": ..}` or `{"tool_calls": [...]}`); a result names its call
in `data.tool_call_id` (or `tool_use_id`/`call_id`) or in a `tool_result` part. No Django here:
tokens.py counts with it at write time, rendering.py shapes messages with it, and
`event_failed` (whether an event is an error) is decided here once for every ingest path.
"""

import json
import re
from dataclasses import dataclass
from typing import Any

CALL_PART_TYPES = ("tool_use", "tool_call", "function_call")
RESULT_PART_TYPES = ("tool_result", "function_call_output")
ID_KEYS = ("id", "call_id", "tool_call_id", "tool_use_id")


@dataclass(frozen=True)
class ToolCall:
    id: str | None
    name: str
    arguments: Any  # a JSON object, or the string the model produced


def _first_str(obj: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _call(obj: Any) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    fn = obj.get("function")
    if not isinstance(fn, dict):  # OpenAI nests the call under "function"
        fn = obj
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        return None
    arguments = fn.get("arguments", fn.get("input", obj.get("input", {})))
    return ToolCall(_first_str(obj, ID_KEYS), name, arguments)


def part_calls(parts: Any) -> list[ToolCall]:
    found = []
    for part in parts or ():
        if isinstance(part, dict) and part.get("type") in CALL_PART_TYPES:
            call = _call(part)
            if call:
                found.append(call)
    return found


def data_calls(data: Any) -> list[ToolCall]:
    """Calls kept in `data`: one call object, or a list under `tool_calls`."""
    if not isinstance(data, dict):
        return []
    if isinstance(data.get("tool_calls"), list):
        return [c for c in map(_call, data["tool_calls"]) if c]
    call = _call(data)
    return [call] if call else []


def event_calls(type_: str, parts: Any, data: Any) -> list[ToolCall]:
    """The tool calls an event makes: from its parts, else (for a ToolCall event) from data."""
    calls = part_calls(parts)
    if not calls and type_ == "ToolCall":
        calls = data_calls(data)
    return calls


def result_call_id(parts: Any, data: Any) -> str | None:
    """The id of the call a tool result answers, when the event names it."""
    if isinstance(data, dict):
        found = _first_str(data, ("tool_call_id", "tool_use_id", "call_id"))
        if found:
            return found
    for part in parts or ():
        if isinstance(part, dict) and part.get("type") in RESULT_PART_TYPES:
            found = _first_str(part, ("tool_use_id", "call_id", "tool_call_id", "id"))
            if found:
                return found
    return None


def arguments_json(arguments: Any) -> str:
    """Arguments as the JSON text OpenAI expects (a string is taken as already JSON text)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def arguments_object(arguments: Any) -> dict[str, Any]:
    """Arguments as the object Anthropic's tool_use `input` must be."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {"value": arguments}


def data_call_text(type_: str, parts: Any, data: Any) -> str:
    """The text of calls kept only in `data`, which the model sees and which costs tokens."""
    if type_ != "ToolCall" or part_calls(parts):
        return ""
    return "\n".join(f"{c.name}({arguments_json(c.arguments)})" for c in data_calls(data))


# --- failures ----------------------------------------------------------------------------------

FAILED_STATUSES = ("error", "failed", "failure")
FLAG_KEYS = ("is_error", "isError")
# Where a framework nests the tool's own answer inside `data` (MCP's CallToolResult under
# "result", an SDK item under "item", ...): the flags are looked for there too, one level down.
NESTED_KEYS = ("result", "response", "output", "item")
# Result objects inside a framework's own copy of the message (data.peteos, data.adk,
# data.agent_framework ...): parts of these types, and ADK's function_response wrappers.
RESULT_OBJECT_TYPES = (*RESULT_PART_TYPES, "function_result")
WRAPPER_KEYS = ("function_response", "functionResponse")
WALK_DEPTH, WALK_NODES = 6, 500  # how far into `data` result objects are looked for
# A tool output that opens like this reports a failure, flagged or not: a Python traceback,
# "Error: ...", "ValueError: ...", "error: ..." (git, compilers), "Error executing tool ..."
# (MCP servers), and the OpenAI Agents SDK's default failure text.
_FAILURE_TEXT = re.compile(
    r"\A\s*(?:Traceback \(most recent call last\):"
    r"|(?:[A-Za-z_][\w.]*)?(?:Error|Exception)\s*:|error\s*:|ERROR\s*:"
    r"|Error executing tool\b|An error occurred while running the tool\b)")
JSON_TEXT_LIMIT = 65_536  # a JSON answer longer than this is not parsed for its flags


def _flagged(obj: Any) -> bool:
    """A result object that says it failed: `is_error`/`isError` true, a failed `status`, or a
    non-empty `error` or `exception`."""
    if not isinstance(obj, dict):
        return False
    status = obj.get("status")
    return (any(obj.get(k) is True for k in FLAG_KEYS)
            or (isinstance(status, str) and status.strip().lower() in FAILED_STATUSES)
            or any(obj.get(k) not in (None, "", False, {}, []) for k in ("error", "exception")))


def _json_flagged(text: str) -> bool:
    stripped = text.lstrip()
    if not stripped.startswith("{") or len(stripped) > JSON_TEXT_LIMIT:
        return False
    try:
        return _flagged(json.loads(stripped))
    except ValueError:
        return False


def _result_objects(value: Any) -> list[dict[str, Any]]:
    """The tool-result objects inside parts or a framework's payload (bounded walk): parts of a
    result type, and the `response` of an ADK function_response."""
    found: list[dict[str, Any]] = []
    stack, seen = [(value, 0)], 0
    while stack and seen < WALK_NODES:
        node, depth = stack.pop()
        seen += 1
        if isinstance(node, dict):
            if node.get("type") in RESULT_OBJECT_TYPES:
                found.append(node)
            found += [w["response"] for k in WRAPPER_KEYS
                      if isinstance(w := node.get(k), dict) and isinstance(w.get("response"), dict)]
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth < WALK_DEPTH:
            stack += [(child, depth + 1) for child in children if isinstance(child, dict | list)]
    return found


def _result_texts(obj: dict[str, Any]) -> list[str]:
    return [v for k in ("content", "output", "result") if isinstance(v := obj.get(k), str)]


def event_failed(type_: str, role: str, content: str, parts: Any, data: Any) -> bool:
    """Whether an event is an error: the one rule for every ingest path (API, adapters, OTLP),
    stored with the row at write time as `Event.is_error` and read everywhere from there (card
    styling, the error counters, "Has errors", previous/next error).

    An `Error` event always is. A tool result (type `ToolResult`, or any event with role `tool`)
    is when
    - it is flagged: `is_error` (Anthropic) or `isError` (MCP) true, `status` "error" / "failed" /
      "failure" (LangChain's ToolMessage, ADK's convention), a non-empty `error` (ADK) or
      `exception` (Agent Framework) -- in `data`, in `data.result` / `.response` / `.output` /
      `.item`, in a result object (a `tool_result` / `function_call_output` / `function_result`
      part, or an ADK function_response's `response`) among its parts or anywhere in `data`
      (a framework's copy of the message), or in text that is a JSON object;
    - or its text (the content, a result object's content / output / result) has a known
      failure shape: it opens with a Python traceback, "Error:" / "SomethingError:" / "error:",
      "Error executing tool", or the OpenAI Agents SDK's "An error occurred while running the
      tool" (OpenAI-style results carry no flag at all).
    Any other event is not: an LLM call's error is its own `Error` event (OTLP derivation makes
    one), so it is counted once."""
    if type_ == "Error":
        return True
    if type_ != "ToolResult" and role != "tool":
        return False
    if isinstance(data, dict) and (_flagged(data) or any(_flagged(data.get(k)) for k in NESTED_KEYS)):
        return True
    results = _result_objects(parts) + _result_objects(data)
    if any(_flagged(r) for r in results):
        return True
    texts = [content or ""] + [t for r in results for t in _result_texts(r)]
    return any(_FAILURE_TEXT.match(t) or _json_flagged(t) for t in texts)
