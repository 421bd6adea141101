"""A recorded LLM call's request as a chat, and as each provider's request body: pure, no database.

What a call sent comes in any of the shapes the store keeps (a render's raw, openai or
anthropic messages, or the messages an agent logged in its provider's shape). `chat` reads
them all into one list of `Turn`s (role, text, thinking, tool calls, the call a result
answers); `openai_body` and `anthropic_body` write those turns, the tool definitions and the
request parameters as the Chat Completions and Messages APIs take them, and `curl` wraps a
body in a command line whose key is a shell variable, never a real key.

Where each provider puts things: OpenAI keeps system text as `system` messages where they
stand, tool calls on the assistant message and each result as a `tool` message; Anthropic
takes system text in the top-level `system` (history notes with role system read as user
text, as render_format does), tool calls as `tool_use` blocks, results as `tool_result`
blocks in a user turn, consecutive same-role turns merged, and requires `max_tokens`.
"""

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from contextstore.tokens import is_thinking, part_text
from contextstore.toolcalls import (
    CALL_PART_TYPES,
    RESULT_PART_TYPES,
    ToolCall,
    arguments_json,
    arguments_object,
)

ENDPOINTS = {"openai": "https://api.openai.com/v1/chat/completions",
             "anthropic": "https://api.anthropic.com/v1/messages"}
ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_DEFAULT_MAX_TOKENS = 4096  # the Messages API refuses a request without max_tokens
# Parameters only one of the two APIs takes; the other body leaves them out.
OPENAI_ONLY = frozenset({"frequency_penalty", "presence_penalty", "seed", "response_format", "logprobs",
                         "top_logprobs", "n", "parallel_tool_calls", "reasoning_effort", "logit_bias",
                         "user", "max_completion_tokens", "stop", "store", "modalities"})
ANTHROPIC_ONLY = frozenset({"top_k", "thinking", "metadata", "stop_sequences", "system",
                            "service_tier"})
OWN_KEYS = frozenset({"model", "messages", "tools"})  # written from the call, never from params


@dataclass
class Turn:
    """One message of the chat: `role` is system, user, assistant or tool (a result)."""

    role: str
    text: str = ""
    thinking: list[dict[str, Any]] = field(default_factory=list)  # the parts, signatures kept
    calls: list[ToolCall] = field(default_factory=list)
    answers: str | None = None  # a tool result: the id of the call it answers
    is_error: bool = False
    history: bool = True  # False for a render's system sections (prefix, summary, suffix)
    section: str = ""  # a raw render's: prefix, summary, history or suffix
    seq: int | None = None  # a raw render's: the event shown
    tokens: int | None = None

    @property
    def thinking_text(self) -> str:
        return "\n\n".join(part_text(p) for p in self.thinking if p.get("type") == "thinking")


# ------------------------------------------------------------------ reading

def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (part_text(p) for p in content) if t)
    return json.dumps(content, ensure_ascii=False)


def _call(obj: dict[str, Any], n: int) -> ToolCall:
    nested = obj.get("function")
    fn: dict[str, Any] = nested if isinstance(nested, dict) else obj  # OpenAI nests the call
    name = str(fn.get("name") or "tool")
    arguments = fn.get("arguments", fn.get("input", obj.get("input", {})))
    ident = obj.get("id") or obj.get("call_id") or f"call_{n}"
    return ToolCall(str(ident), name, arguments)


def _turns(message: Any, n: int) -> list[Turn]:
    """The turns one message holds: most hold one; an Anthropic user turn holds one per
    tool_result block, then its text."""
    if not isinstance(message, dict):
        return [Turn("user", _content_text(message))]
    role = str(message.get("role") or "user")
    content, parts = message.get("content"), message.get("parts")
    blocks = content if isinstance(content, list) else parts if isinstance(parts, list) else []
    texts = [] if isinstance(content, list) else [_content_text(content)]
    section = str(message.get("section") or "")
    seq, tokens = message.get("seq"), message.get("tokens")
    turn = Turn(role, history=section in ("", "history"), section=section,
                seq=seq if isinstance(seq, int) else None, tokens=tokens if isinstance(tokens, int) else None)
    results: list[Turn] = []
    for part in blocks:
        kind = part.get("type") if isinstance(part, dict) else None
        if is_thinking(part):
            turn.thinking.append(part)
        elif kind in CALL_PART_TYPES:
            if not isinstance(message.get("tool_calls"), list):  # a raw render names them there
                turn.calls.append(_call(part, n * 100 + len(turn.calls)))
        elif kind in RESULT_PART_TYPES:
            ident = part.get("tool_use_id") or part.get("call_id") or part.get("tool_call_id")
            results.append(Turn("tool", _content_text(part.get("content", part.get("output"))),
                                answers=str(ident or ""), is_error=part.get("is_error") is True))
        elif isinstance(content, list) or not texts[0]:  # parts repeat content's text (render_format)
            texts.append(part_text(part))
    turn.text = "\n".join(t for t in texts if t)
    for n2, call in enumerate(message.get("tool_calls") or ()):
        if isinstance(call, dict):
            turn.calls.append(_call(call, n * 100 + n2))
    if message.get("tool_call_id") or role == "tool":
        turn.role, turn.answers = "tool", str(message.get("tool_call_id") or "")
        turn.is_error = message.get("is_error") is True
        return [turn]
    if results and len(results) == len(blocks):  # a turn of nothing but results
        return results
    return results + ([turn] if turn.text or turn.calls or turn.thinking or not results else [])


def chat(*, system: list[Any], messages: list[Any]) -> list[Turn]:
    """The request as one list of turns, whatever shape it was recorded in. `system` is an
    Anthropic render's top-level system blocks."""
    turns = [Turn("system", _content_text([s]), history=False) for s in system]
    for n, message in enumerate(messages):
        turns.extend(_turns(message, n))
    # System messages before the first other turn and after the last are sections (an openai
    # render's prefix, summary and suffix; a logged prompt's instructions), not history.
    for run in (turns, turns[::-1]):
        for t in run:
            if t.role != "system" or t.section == "history":
                break
            t.history = False
    return turns


@dataclass
class Tool:
    name: str
    description: str
    schema: dict[str, Any]


def tools_of(tools: list[Any] | None) -> list["Tool"]:
    """Tool definitions in OpenAI's (`{"type": "function", "function": {...}}`), Anthropic's
    (`input_schema`) or a plain `{"name", "description", "parameters"}` shape."""
    out = []
    for tool in tools or ():
        if not isinstance(tool, dict):
            continue
        nested = tool.get("function")
        fn: dict[str, Any] = nested if isinstance(nested, dict) else tool
        schema = fn.get("parameters", fn.get("input_schema"))
        out.append(Tool(str(fn.get("name") or ""), str(fn.get("description") or ""),
                        schema if isinstance(schema, dict) else {"type": "object", "properties": {}}))
    return out


# ------------------------------------------------------------------ writing

def _params(params: dict[str, Any], drop: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in drop and k not in OWN_KEYS}


def _openai_tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") in ("auto", "any", "tool", "none"):
        kind = choice["type"]
        if kind == "tool":
            return {"type": "function", "function": {"name": choice.get("name", "")}}
        return {"any": "required"}.get(kind, kind)
    return choice


def _anthropic_tool_choice(choice: Any) -> Any:
    if isinstance(choice, str):
        return {"type": {"required": "any"}.get(choice, choice)}
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return {"type": "tool", "name": choice["function"].get("name", "")}
    return choice


def openai_body(*, model: str, turns: list[Turn], tools: list[Any] | None,
                params: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions request body. Thinking has no place in it and is left out."""
    messages: list[dict[str, Any]] = []
    for t in turns:
        if t.role == "tool":
            messages.append({"role": "tool", "tool_call_id": t.answers, "content": t.text})
        elif t.role == "assistant":
            if not t.text and not t.calls:  # thinking alone: nothing Chat Completions takes
                continue
            message: dict[str, Any] = {"role": "assistant", "content": t.text or None}
            if t.calls:
                message["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name, "arguments": arguments_json(c.arguments)}}
                    for c in t.calls]
            messages.append(message)
        else:
            role = t.role if t.role in ("system", "developer", "user") else "user"
            messages.append({"role": role, "content": t.text})
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        body["tools"] = [{"type": "function", "function": {
            "name": t.name, "description": t.description, "parameters": t.schema}} for t in tools_of(tools)]
    rest = _params(params, ANTHROPIC_ONLY)
    if "stop_sequences" in params and "stop" not in rest:
        rest["stop"] = params["stop_sequences"]
    if "tool_choice" in rest:
        rest["tool_choice"] = _openai_tool_choice(rest["tool_choice"])
    return {**body, **rest}


def _anthropic_blocks(t: Turn) -> tuple[str, list[dict[str, Any]]]:
    if t.role == "tool":
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": t.answers, "content": t.text}
        if t.is_error:
            block["is_error"] = True
        return "user", [block]
    if t.role != "assistant":
        return "user", [{"type": "text", "text": t.text}] if t.text else []
    blocks: list[dict[str, Any]] = []
    for part in t.thinking:  # the API takes thinking back only with the signature it gave
        if part.get("type") == "thinking" and isinstance(part.get("signature"), str):
            blocks.append({"type": "thinking", "thinking": part_text(part), "signature": part["signature"]})
        elif part.get("type") == "redacted_thinking" and isinstance(part.get("data"), str):
            blocks.append({"type": "redacted_thinking", "data": part["data"]})
    if t.text:
        blocks.append({"type": "text", "text": t.text})
    blocks.extend({"type": "tool_use", "id": c.id, "name": c.name, "input": arguments_object(c.arguments)}
                  for c in t.calls)
    return "assistant", blocks


def anthropic_body(*, model: str, turns: list[Turn], tools: list[Any] | None,
                   params: dict[str, Any]) -> dict[str, Any]:
    """A Messages API request body: system text in `system`, results in user turns."""
    system = [{"type": "text", "text": t.text} for t in turns if t.role in ("system", "developer")
              and not t.history and t.text]
    messages: list[dict[str, Any]] = []
    for t in turns:
        if t.role in ("system", "developer") and not t.history:
            continue
        role, blocks = _anthropic_blocks(t)
        if not blocks:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    rest = _params(params, OPENAI_ONLY)
    max_tokens = params.get("max_tokens", params.get("max_completion_tokens", ANTHROPIC_DEFAULT_MAX_TOKENS))
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
    if system:
        body["system"] = system
    body["messages"] = messages
    if tools:
        body["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.schema}
                         for t in tools_of(tools)]
    if "stop" in params and "stop_sequences" not in rest:
        stop = params["stop"]
        rest["stop_sequences"] = stop if isinstance(stop, list) else [stop]
    if "tool_choice" in rest:
        rest["tool_choice"] = _anthropic_tool_choice(rest["tool_choice"])
    rest.pop("max_tokens", None)
    return {**body, **rest}


def curl(provider: str, body: dict[str, Any]) -> str:
    """A curl command sending `body`, its key read from the shell ($OPENAI_API_KEY or
    $ANTHROPIC_API_KEY); the body goes in a quoted here-document, so nothing in it is expanded."""
    if provider == "anthropic":
        headers = ['"x-api-key: $ANTHROPIC_API_KEY"', f'"anthropic-version: {ANTHROPIC_VERSION}"']
    else:
        headers = ['"Authorization: Bearer $OPENAI_API_KEY"']
    lines = [f"curl {shlex.quote(ENDPOINTS[provider])}", "-H 'Content-Type: application/json'"]
    lines += [f"-H {h}" for h in headers] + ["--data-binary @- <<'JSON'"]
    return " \\\n  ".join(lines) + "\n" + dumps(body) + "\nJSON\n"


def dumps(body: dict[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False, indent=2)
