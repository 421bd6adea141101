"""GenAI spans in their dialects, read into one message model (no database).

Every instrumentation says the same things its own way. This module reads them all into:

- a message: `{"role": "system" | "user" | "assistant" | "tool", "parts": [...]}` with the
  parts of the current GenAI semantic conventions: `{"type": "text", "content"}`,
  `{"type": "tool_call", "id", "name", "arguments"}`,
  `{"type": "tool_call_response", "id", "response"}`, `{"type": "reasoning", "content"}`, and
  media parts (`uri`, `blob`, `file`) kept as they came;
- an LLM call (`LLMCall`): its input messages exactly as sent (system instructions first),
  its output messages, model, provider, usage, finish reasons, and the attributes no rule read.

Dialects, in the order they are tried (the first that yields messages wins):
1. GenAI semantic conventions: `gen_ai.input.messages`, `gen_ai.output.messages`,
   `gen_ai.system_instructions` (attributes, or the `gen_ai.client.inference.operation.details`
   event or log record);
2. OpenInference: `llm.input_messages.N.message.*`, `llm.output_messages.N.message.*`;
3. the flattened form OpenLLMetry used: `gen_ai.prompt.N.*`, `gen_ai.completion.N.*`;
4. Google ADK: `gcp.vertex.agent.llm_request` / `gcp.vertex.agent.llm_response`;
5. the older event form: span events or log records `gen_ai.system.message`,
   `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message`, `gen_ai.choice`.

docs/otel.md lists every attribute read here.
"""

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from contextstore.usage import read_usage

Message = dict[str, Any]
Attrs = dict[str, Any]

# Session ids, best first: the first level any span of a trace (or its resource) names wins.
SESSION_KEYS: tuple[tuple[str, ...], ...] = (
    ("contextstore.session.id",),
    ("gen_ai.conversation.id",),
    ("session.id", "langfuse.session.id"),
    ("gcp.vertex.agent.session_id", "metadata.thread_id", "metadata.group_id", "group_id",
     "openai.agents.group_id"),
)
USER_KEYS = ("user.id", "enduser.id", "langfuse.user.id", "gcp.vertex.agent.user_id")
AGENT_KEYS = ("gen_ai.agent.name", "agent.name", "gcp.vertex.agent.agent_name")

OPERATION_DETAILS = "gen_ai.client.inference.operation.details"
# What ADK's content events say in place of the content when capturing it is off.
ELIDED = "<elided>"
# ADK's call_llm span names itself as `gen_ai.system`: no provider (its generate_content says it).
_ADK_SCOPE = "gcp.vertex.agent"
_ROLES = {"model": "assistant", "ai": "assistant", "human": "user", "developer": "system",
          "function": "tool", "ipython": "tool"}
_LEGACY_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                  "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}

# What each rule reads (so the rest can be kept as the call's unmapped attributes).
_MAPPED_PREFIXES = (
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
    "gen_ai.tool.definitions", "gen_ai.usage.", "gen_ai.response.", "gen_ai.request.",
    "llm.invocation_parameters",
    "gen_ai.provider.name", "gen_ai.system", "gen_ai.operation.name", "gen_ai.prompt.",
    "gen_ai.completion.", "gen_ai.conversation.id", "gen_ai.agent.name",
    "llm.input_messages.", "llm.output_messages.", "llm.token_count.", "llm.model_name",
    "llm.provider", "llm.system", "llm.tools.", "llm.finish_reason", "llm.usage.",
    "llm.request.type", "openinference.span.kind", "input.value", "output.value",
    "input.mime_type", "output.mime_type", "gcp.vertex.agent.llm_request",
    "gcp.vertex.agent.llm_response", "session.id", "user.id", "contextstore.session.id",
    "langfuse.session.id", "gcp.vertex.agent.session_id", *USER_KEYS,
)


def json_value(value: Any) -> Any:
    """A JSON text attribute parsed (instrumentations send structures as strings); else as is."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _index(step: str) -> int | str:
    """A list index of a flattened attribute key: ASCII digits alone ("²".isdigit() is true,
    and int() refuses it; a crafted key stays a name, never a failed derivation)."""
    return int(step) if step.isascii() and step.isdigit() and len(step) <= 18 else step


def unflatten(attrs: Attrs, prefix: str) -> Any:
    """`prefix.0.message.role = x` style attributes as nested lists and dicts."""
    root: dict[Any, Any] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        node = root
        *path, last = key[len(prefix):].split(".")
        for step in path:
            node = node.setdefault(_index(step), {})
            if not isinstance(node, dict):
                break
        else:
            node[_index(last)] = value
    return _listed(root)


def _listed(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node and all(isinstance(k, int) for k in node):
        return [_listed(node[k]) for k in sorted(node)]
    return {k: _listed(v) for k, v in node.items()}


# ------------------------------------------------------------------ parts

def _arguments(value: Any) -> Any:
    """Tool-call arguments as a JSON object where they are one (text or not), so the same call
    reads the same whichever dialect carried it."""
    parsed = json_value(value)
    return parsed if parsed is not None else {}


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def tool_call(id_: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": str(id_ or ""), "name": str(name or ""),
            "arguments": _arguments(arguments)}


def _openai_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Parts of a chat-completions style message (`content`, `tool_calls`, `tool_call_id`)."""
    parts: list[dict[str, Any]] = []
    content = message.get("content")
    role = _role(message.get("role"))
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        for item in content:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append({"type": "text", "content": item["text"]})
            elif isinstance(item, dict):
                parts.append(dict(item))
            elif isinstance(item, str):
                parts.append({"type": "text", "content": item})
    elif content not in (None, ""):
        text = _text(content)
        if role == "tool":
            parts.append({"type": "tool_call_response",
                          "id": str(message.get("tool_call_id") or message.get("id") or ""),
                          "response": text})
        else:
            parts.append({"type": "text", "content": text})
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict):
            fn = _dict(call.get("function")) or call
            parts.append(tool_call(call.get("id"), fn.get("name"), fn.get("arguments")))
    return parts


def _role(value: Any) -> str:
    role = str(value or "user").lower()
    return _ROLES.get(role, role)


def _semconv_part(part: Any) -> dict[str, Any] | None:
    if isinstance(part, str):
        return {"type": "text", "content": part}
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind == "tool_call":
        return tool_call(part.get("id"), part.get("name"), part.get("arguments"))
    if kind == "tool_call_response":
        return {"type": "tool_call_response", "id": str(part.get("id") or ""),
                "response": _text(part.get("response", part.get("result", "")))}
    if kind in ("text", "reasoning", "thinking") and "content" in part:
        return {"type": "reasoning" if kind == "thinking" else kind, "content": _text(part["content"])}
    return dict(part)


def semconv_messages(value: Any) -> list[Message]:
    """`gen_ai.input.messages` / `gen_ai.output.messages` (JSON text or a list)."""
    value = json_value(value)
    if not isinstance(value, list):
        return []
    out = []
    for item in value:
        if not isinstance(item, dict):
            continue
        if "parts" in item:
            parts = [p for p in map(_semconv_part, item.get("parts") or ()) if p]
        else:  # some emitters put chat-completions messages here
            parts = _openai_parts(item)
        out.append({"role": _role(item.get("role")), "parts": parts})
    return out


def _system_instructions(value: Any) -> list[Message]:
    value = json_value(value)
    if isinstance(value, str) and value:
        return [{"role": "system", "parts": [{"type": "text", "content": value}]}]
    if isinstance(value, list):
        parts = [p for p in map(_semconv_part, value) if p]
        if parts:
            return [{"role": "system", "parts": parts}]
    return []


# ------------------------------------------------------------------ dialects

def _openinference_messages(items: Any) -> list[Message]:
    out = []
    for item in items if isinstance(items, list) else ():
        message = item.get("message") if isinstance(item, dict) else None
        if not isinstance(message, dict):
            continue
        parts: list[dict[str, Any]] = []
        role = _role(message.get("role"))
        content = message.get("content")
        if content not in (None, ""):
            if role == "tool":
                parts.append({"type": "tool_call_response", "id": str(message.get("tool_call_id") or ""),
                              "response": _text(content)})
            else:
                parts.append({"type": "text", "content": _text(content)})
        for entry in message.get("contents") or ():
            mc = entry.get("message_content") if isinstance(entry, dict) else None
            if isinstance(mc, dict) and mc.get("type") == "text":
                parts.append({"type": "text", "content": _text(mc.get("text", ""))})
            elif isinstance(mc, dict):
                parts.append({"type": str(mc.get("type") or "media"),
                              **{k: v for k, v in mc.items() if k != "type"}})
        for entry in message.get("tool_calls") or ():
            call = entry.get("tool_call") if isinstance(entry, dict) else None
            if isinstance(call, dict):
                fn = _dict(call.get("function"))
                parts.append(tool_call(call.get("id"), fn.get("name"), fn.get("arguments")))
        out.append({"role": role, "parts": parts})
    return out


def _flat_messages(items: Any) -> list[Message]:
    """`gen_ai.prompt.N.*` / `gen_ai.completion.N.*` (role, content, tool_calls.M.*, tool_call_id)."""
    out = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        message = dict(item)
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            message["tool_calls"] = [c for c in calls if isinstance(c, dict)]
        message["content"] = json_value(message.get("content"))
        normalised = {"role": _role(message.get("role")), "parts": _openai_parts(message)}
        if message.get("finish_reason"):
            normalised["finish_reason"] = message["finish_reason"]
        out.append(normalised)
    return out


def _adk_parts(parts: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, dict):
            continue
        if part.get("thought") and isinstance(part.get("text"), str):
            out.append({"type": "reasoning", "content": part["text"]})
        elif isinstance(part.get("text"), str):
            out.append({"type": "text", "content": part["text"]})
        elif isinstance(part.get("function_call"), dict):
            call = part["function_call"]
            out.append(tool_call(call.get("id"), call.get("name"), call.get("args")))
        elif isinstance(part.get("function_response"), dict):
            reply = part["function_response"]
            out.append({"type": "tool_call_response", "id": str(reply.get("id") or ""),
                        "response": _text(reply.get("response", ""))})
        else:
            out.append({"type": "media", **part})
    return out


def _adk_message(content: Any) -> Message | None:
    if not isinstance(content, dict):
        return None
    parts = _adk_parts(content.get("parts"))
    role = _role(content.get("role"))
    if parts and all(p["type"] == "tool_call_response" for p in parts):
        role = "tool"
    return {"role": role, "parts": parts}


def _adk(attrs: Attrs) -> tuple[list[Message], list[Message], dict[str, Any]]:
    request = json_value(attrs.get("gcp.vertex.agent.llm_request"))
    response = json_value(attrs.get("gcp.vertex.agent.llm_response"))
    inputs: list[Message] = []
    extra: dict[str, Any] = {}
    if isinstance(request, dict):
        config = _dict(request.get("config"))
        inputs += _system_instructions(config.get("system_instruction"))
        inputs += [m for m in map(_adk_message, request.get("contents") or ()) if m]
        if request.get("model"):
            extra["model"] = request["model"]
    outputs: list[Message] = []
    if isinstance(response, dict):
        message = _adk_message(response.get("content"))
        if message:
            outputs.append(message)
        usage = read_usage(_dict(response.get("usage_metadata")))
        if usage is not None:  # Gemini's: its output counts the thinking's tokens too
            extra.update(input_tokens=usage.input, output_tokens=usage.output)
            if usage.reports_cache:
                extra["cache_read_tokens"] = usage.cache_read
        if response.get("finish_reason"):
            extra["finish_reasons"] = [str(response["finish_reason"]).lower()]
    return inputs, outputs, extra


def _legacy_event_message(name: str, body: Any) -> Message | None:
    """One older GenAI content event (a span event's attributes or a log record's body)."""
    body = json_value(body)
    if not isinstance(body, dict):
        body = {"content": body} if body not in (None, "") else {}
    if body.get("content") == ELIDED:  # content capture off: the message is not known
        if name == "gen_ai.choice":
            return {"role": "assistant", "parts": [], "finish_reason": body.get("finish_reason")}
        return None
    if name == "gen_ai.choice":
        message = _dict(json_value(body.get("message"))) or body
        return {"role": "assistant", "parts": _openai_parts({**message, "role": "assistant"}),
                "finish_reason": body.get("finish_reason")}
    role = _LEGACY_EVENTS.get(name)
    if role is None:
        return None
    content = json_value(body.get("content", body.get("gen_ai.event.content")))
    if isinstance(content, dict) and ("content" in content or "tool_calls" in content):
        body = content
        content = json_value(body.get("content"))
    return {"role": role, "parts": _openai_parts({**body, "content": content, "role": role})}


# ------------------------------------------------------------------ the call

@dataclass
class LLMCall:
    """What one LLM span says about its call."""

    inputs: list[Message]
    outputs: list[Message]
    model: str = ""
    response_model: str = ""
    provider: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    cost: float | None = None
    finish_reasons: list[str] = field(default_factory=list)
    response_id: str = ""
    tools: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    unmapped: Attrs = field(default_factory=dict)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and isinstance(number := _index(value), int):
        return number
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _first(attrs: Attrs, *keys: str) -> Any:
    for key in keys:
        if attrs.get(key) not in (None, ""):
            return attrs[key]
    return None


USAGE_KEYS = {
    "input_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt",
                     "llm.usage.prompt_tokens"),
    "output_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                      "llm.token_count.completion", "llm.usage.completion_tokens"),
    "cache_read_tokens": ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
                          "llm.token_count.prompt_details.cache_read"),
    "cache_creation_tokens": ("gen_ai.usage.cache_creation.input_tokens",
                              "gen_ai.usage.cache_creation_input_tokens",
                              "llm.token_count.prompt_details.cache_write"),
    "reasoning_tokens": ("gen_ai.usage.reasoning_tokens", "gen_ai.usage.reasoning.output_tokens",
                         "llm.token_count.completion_details.reasoning"),
}


def _content_events(events: Iterable[dict[str, Any]]) -> tuple[Attrs, list[Message], list[Message]]:
    """Attributes carried by an operation-details event, and the older per-message events
    split into inputs and outputs (choices)."""
    carried: Attrs = {}
    inputs: list[Message] = []
    outputs: list[Message] = []
    for event in events:
        name = event.get("name") or ""
        attrs = event.get("attributes") or {}
        if name == OPERATION_DETAILS:
            carried.update(attrs)
            if isinstance(event.get("body"), dict):
                carried.update(event["body"])
            continue
        message = _legacy_event_message(name, event.get("body", attrs) if "body" in event else attrs)
        if message is None:
            continue
        (outputs if name == "gen_ai.choice" else inputs).append(message)
    return carried, inputs, outputs


def is_llm_span(attrs: Attrs, name: str) -> bool:
    operation = attrs.get("gen_ai.operation.name")
    if operation in ("chat", "text_completion", "generate_content", "completion"):
        return True
    if attrs.get("openinference.span.kind") == "LLM":
        return True
    if operation != "execute_tool" and json_value(attrs.get("gcp.vertex.agent.llm_request")):
        return True  # ADK's call_llm (its tool spans carry an empty "{}" request too)
    if attrs.get("llm.request.type") in ("chat", "completion"):
        return True
    return (operation is None and name.startswith(("chat ", "generate_content "))
            and "gen_ai.request.model" in attrs)


def llm_call(attrs: Attrs, events: Iterable[dict[str, Any]]) -> LLMCall:
    """The call an LLM span describes (its span events and log records in `events`)."""
    carried, legacy_in, legacy_out = _content_events(events)
    attrs = {**attrs, **carried}
    extra: dict[str, Any] = {}
    system = _system_instructions(attrs.get("gen_ai.system_instructions"))
    inputs = system + semconv_messages(attrs.get("gen_ai.input.messages"))
    outputs = semconv_messages(attrs.get("gen_ai.output.messages"))
    if not inputs and not outputs:
        inputs = _openinference_messages(unflatten(attrs, "llm.input_messages."))
        outputs = _openinference_messages(unflatten(attrs, "llm.output_messages."))
    if not inputs and not outputs:
        inputs = _flat_messages(unflatten(attrs, "gen_ai.prompt."))
        outputs = _flat_messages(unflatten(attrs, "gen_ai.completion."))
    if not inputs and not outputs:
        inputs, outputs, extra = _adk(attrs)
    if not inputs and not outputs:
        inputs, outputs = legacy_in, legacy_out
    finish = attrs.get("gen_ai.response.finish_reasons") or extra.get("finish_reasons")
    if not finish:
        finish = [m["finish_reason"] for m in outputs if m.get("finish_reason")]
    if not finish and attrs.get("llm.finish_reason"):
        finish = [attrs["llm.finish_reason"]]
    for message in inputs + outputs:
        message.pop("finish_reason", None)
    usage = {ours: n for ours, keys in USAGE_KEYS.items()
             if (n := _int(_first(attrs, *keys))) is not None}
    for key in ("input_tokens", "output_tokens", "cache_read_tokens"):
        if key not in usage and isinstance(extra.get(key), int):
            usage[key] = extra[key]
    cost = _first(attrs, "gen_ai.usage.cost", "llm.cost.total", "gen_ai.usage.cost_usd")
    tools = json_value(attrs.get("gen_ai.tool.definitions"))
    if tools is None:
        oi_tools = unflatten(attrs, "llm.tools.")
        if isinstance(oi_tools, list):
            tools = [json_value((t.get("tool") or {}).get("json_schema"))
                     for t in oi_tools if isinstance(t, dict)]
    provider = str(_first(attrs, "gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system") or "")
    return LLMCall(
        inputs=inputs, outputs=outputs,
        model=str(_first(attrs, "gen_ai.request.model", "llm.model_name") or extra.get("model") or ""),
        response_model=str(_first(attrs, "gen_ai.response.model", "llm.model_name") or ""),
        provider="" if provider == _ADK_SCOPE else provider,
        usage=usage,
        cost=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
        finish_reasons=[str(f) for f in finish] if isinstance(finish, list | tuple) else [str(finish)],
        response_id=str(attrs.get("gen_ai.response.id") or ""),
        tools=tools, params=request_params(attrs), unmapped=unmapped(attrs),
    )


def request_params(attrs: Attrs) -> dict[str, Any]:
    """The request's parameters (temperature, max_tokens, top_p, stop_sequences, seed, ...): the
    GenAI conventions' `gen_ai.request.*` but the model, or OpenInference's
    `llm.invocation_parameters` (a JSON object), as the call's `params`."""
    params = json_value(attrs.get("llm.invocation_parameters"))
    found = {k: v for k, v in params.items() if k not in ("model", "messages", "tools", "input")} \
        if isinstance(params, dict) else {}
    prefix = "gen_ai.request."
    found |= {key[len(prefix):]: value for key, value in attrs.items()
              if key.startswith(prefix) and key != "gen_ai.request.model"}
    return found


def unmapped(attrs: Attrs) -> Attrs:
    """The attributes no rule here reads, kept in the event's data."""
    return {k: v for k, v in attrs.items() if not k.startswith(_MAPPED_PREFIXES)}


# ------------------------------------------------------------------ identity

def message_digest(message: Message) -> str:
    """A message's identity by content: the same message in every span that repeats it."""
    text = json.dumps({"role": message.get("role"), "parts": message.get("parts")},
                      ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def session_hint(attrs: Attrs) -> tuple[int, str] | None:
    """(level, id) of the best session id these attributes name (level 0 is best)."""
    metadata = json_value(attrs.get("metadata"))
    if isinstance(metadata, dict):
        attrs = {**attrs, **{f"metadata.{k}": v for k, v in metadata.items()}}
    for level, keys in enumerate(SESSION_KEYS):
        value = _first(attrs, *keys)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return level, str(value)
    return None


def first_of(attrs: Attrs, keys: tuple[str, ...]) -> str:
    value = _first(attrs, *keys)
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else ""


def is_agent_span(attrs: Attrs, name: str) -> bool:
    return (attrs.get("gen_ai.operation.name") in ("invoke_agent", "create_agent")
            or attrs.get("openinference.span.kind") == "AGENT"
            or name.startswith("invoke_agent"))


def tool_span(attrs: Attrs) -> tuple[str, str, Any, Any] | None:
    """(call id, tool name, arguments, result) of an `execute_tool` span (or an OpenInference
    TOOL span), else None."""
    if (attrs.get("gen_ai.operation.name") != "execute_tool"
            and attrs.get("openinference.span.kind") != "TOOL"):
        return None
    call_id = first_of(attrs, ("gen_ai.tool.call.id", "tool_call.id"))
    name = first_of(attrs, ("gen_ai.tool.name", "tool.name"))
    # OpenInference's `tool.parameters` is the tool's schema, not the call's arguments.
    arguments = _first(attrs, "gen_ai.tool.call.arguments", "gcp.vertex.agent.tool_call_args", "input.value")
    result = _first(attrs, "gen_ai.tool.call.result", "gcp.vertex.agent.tool_response", "output.value")
    return call_id, name, arguments, result


def call_key(name: Any, arguments: Any) -> str:
    """A tool call by what it asks (name and arguments): how a tool span that names no call id
    (OpenInference's) is matched to the call an LLM span carried."""
    return json.dumps([str(name or ""), _arguments(arguments)], sort_keys=True, default=str)
