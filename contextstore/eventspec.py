"""The one definition of an incoming event: its fields, their rules, and the validated
`EventSpec` every path that adds events builds from (append, commit, sync, import, the Summary
of a collapse). No database: a boundary checks a batch here before any lock is taken.

Every refusal names the place in the body it is about (`events[0].type`,
`items[3].event.occurred_at`) in the error's details, so each endpoint that takes events
answers a bad one in the same shape.
"""

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from contextstore.errors import InvalidInput, PayloadTooLarge
from contextstore.fields import NUL_IN_NAME
from contextstore.tokens import event_tokens

# The documented types keep their meaning (the dashboard styles them, runtime ones are hidden
# from the model by default); any other valid name is stored and shown as a generic entry.
MODEL_VISIBLE_TYPES = (
    "Task", "Message", "Reasoning", "Error", "Feedback", "LLMOutput", "PythonOutput",
    "Summary", "Notification", "ToolCall", "ToolResult", "Input", "StepResult",
)
RUNTIME_TYPES = ("BeforeAgentCall", "AfterAgentCall", "LLMCallStart", "LLMCallEnd", "LLMComplete")
EVENT_TYPES = MODEL_VISIBLE_TYPES + RUNTIME_TYPES
# The events that record an LLM call: their data's request (messages, tools, params) and the
# hashes standing for its texts have a shape of their own (services/renders keeps the texts).
LLM_CALL_TYPES = ("LLMCallStart", "LLMComplete", "LLMCallEnd")
MAX_LOGGED_MESSAGES = 2000
MAX_LOGGED_TOOLS = 500
MAX_PARAMS_CHARS = 10_000  # request parameters stay inline in the event: small by nature

TYPE_MAX_LENGTH = 64
STRING_FIELDS = {"role": 32, "call_id": 200, "step": 200, "anchor": 200, "client_id": 200, "run_id": 200}
EVENT_FIELDS = frozenset({"type", "role", "content", "parts", "data", "run_id", "call_id", "step",
                          "anchor", "client_id", "visible", "occurred_at"})
# What json.dumps(sort_keys=True, separators=(",", ":"), default=str) builds on every call.
_HASH_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


# Hex digits of an event's SHA-256 kept in its row (payload_hash): 128 bits tell two payloads
# sent under one client id apart, in half the bytes of every row. Rows stored before kept all
# 64; compare with `same_payload`.
PAYLOAD_HASH_KEPT = 32


def same_payload(stored: str, given: str) -> bool:
    """Whether a stored payload hash (32 hex digits, or 64 from before) is the one given."""
    return stored[:PAYLOAD_HASH_KEPT] == given[:PAYLOAD_HASH_KEPT]


@dataclass(slots=True)
class EventSpec:
    """One validated event to add, with its tokens counted before any lock is taken."""

    type: str
    role: str
    content: str
    parts: list[Any] | None
    data: Any
    run_id: str
    call_id: str
    step: str
    anchor: str
    client_id: str | None
    visible: bool
    occurred_at: datetime | None
    payload_hash: str
    token_count: int
    thinking_tokens: int
    # A framework's own id for the item this event stores ("<namespace>:<key>"), set by sync.
    item_key: str | None = None


def event_type_problem(value: Any) -> str | None:
    """Why `value` is not an event type name, or None. Types are open (frameworks bring their own
    vocabularies): any 1-64 printable characters without whitespace; the documented types keep
    their meaning and every other name is shown as a generic entry."""
    if not isinstance(value, str) or not value:
        return "required; a name such as Message"
    if len(value) > TYPE_MAX_LENGTH:
        return f"at most {TYPE_MAX_LENGTH} characters"
    if not value.isprintable() or value.split() != [value]:  # split() cuts at any whitespace
        return "printable characters only, without whitespace or control characters"
    return None


def parse_stored_datetime(value: Any) -> datetime:
    """An ISO 8601 date-time that every supported database stores and reads back: a real date,
    naive meaning UTC, and within years 1-9999 once converted to UTC (PostgreSQL would store
    9999-12-31T23:59:59-12:00 as year 10000, which Python cannot read back). Raises ValueError
    saying what is wrong."""
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 date-time string")
    try:
        parsed = parse_datetime(value)
    except ValueError as exc:  # well formed but not a date, e.g. month 13
        raise ValueError(f"not a valid date-time ({exc})") from exc
    if parsed is None:
        raise ValueError("must be an ISO 8601 date-time")
    if timezone.is_naive(parsed):
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError("out of range: must fall within years 1-9999 in UTC") from exc


def _fail(place: str, message: str) -> InvalidInput:
    return InvalidInput(f"{place}: {message}", details={place: message})


def is_hash(value: Any) -> bool:
    """A sha256 hex digest, as the server names a stored text."""
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _check_call_data(place: str, data: dict[str, Any]) -> None:
    """An LLM call's data as the client sent it: the request's messages, its model parameters,
    its tool definitions, and the text hashes a client may send instead of the texts."""
    messages = data.get("messages")
    if messages is not None and (not isinstance(messages, list) or len(messages) > MAX_LOGGED_MESSAGES):
        raise InvalidInput(f"{place}.data.messages must be a list of at most "
                           f"{MAX_LOGGED_MESSAGES} messages.",
                           details={f"{place}.data.messages": "invalid"})
    params = data.get("params")
    if params is not None and (not isinstance(params, dict) or len(
            json.dumps(params, ensure_ascii=False)) > MAX_PARAMS_CHARS):
        raise InvalidInput(f"{place}.data.params must be an object of at most "
                           f"{MAX_PARAMS_CHARS} characters as JSON.",
                           details={f"{place}.data.params": "invalid"})
    tools = data.get("tools")
    if tools is not None and (not isinstance(tools, list) or len(tools) > MAX_LOGGED_TOOLS
                              or not all(isinstance(t, dict) for t in tools)):
        raise InvalidInput(f"{place}.data.tools must be a list of at most "
                           f"{MAX_LOGGED_TOOLS} tool definitions (objects).",
                           details={f"{place}.data.tools": "invalid"})
    if "message_hashes" in data:
        hashes = data["message_hashes"]
        if not isinstance(hashes, list) or len(hashes) > MAX_LOGGED_MESSAGES \
                or not all(is_hash(h) for h in hashes):
            raise InvalidInput(f"{place}.data.message_hashes must be a list of at most "
                               f"{MAX_LOGGED_MESSAGES} sha256 hex digests.",
                               details={f"{place}.data.message_hashes": "invalid"})
    if "tools_hash" in data and not is_hash(data["tools_hash"]):
        raise InvalidInput(f"{place}.data.tools_hash must be a sha256 hex digest.",
                           details={f"{place}.data.tools_hash": "invalid"})


def event_spec(raw: Any, place: str) -> EventSpec:
    """The event `raw` validated; `place` is where the body holds it (`events[0]`), which every
    refusal names."""
    if not isinstance(raw, dict):
        raise _fail(place, "each event must be a JSON object")
    unknown = raw.keys() - EVENT_FIELDS
    if unknown:
        raise _fail(f"{place}.{sorted(unknown)[0]}", "unknown field")
    etype: Any = raw.get("type")  # a str once event_type_problem finds none
    problem = event_type_problem(etype)
    if problem:
        raise _fail(f"{place}.type", problem)
    content = raw.get("content", "")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise _fail(f"{place}.content", "must be a string")
    limit = settings.CONTEXTSTORE["MAX_EVENT_CONTENT_BYTES"]
    if len(content) * 4 > limit and len(content.encode()) > limit:  # at most 4 bytes a character
        raise PayloadTooLarge(f"{place}.content is larger than {limit} bytes.",
                              details={f"{place}.content": f"at most {limit} bytes"})
    parts = raw.get("parts")
    if parts is not None and not isinstance(parts, list):
        raise _fail(f"{place}.parts", "must be a list")
    data = raw.get("data")
    if etype in LLM_CALL_TYPES and isinstance(data, dict):
        _check_call_data(place, data)
    strings: dict[str, str] = {}
    for field, max_length in STRING_FIELDS.items():
        value = raw.get(field)
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise _fail(f"{place}.{field}", "must be a string")
        if len(value) > max_length:
            raise _fail(f"{place}.{field}", f"at most {max_length} characters")
        if "\x00" in value:
            raise _fail(f"{place}.{field}", NUL_IN_NAME)
        strings[field] = value
    visible = raw.get("visible")
    if visible is None:
        visible = etype not in RUNTIME_TYPES
    elif not isinstance(visible, bool):
        raise _fail(f"{place}.visible", "must be true or false")
    occurred_at = raw.get("occurred_at")
    if occurred_at is not None:
        try:
            occurred_at = parse_stored_datetime(occurred_at)
        except ValueError as exc:
            raise _fail(f"{place}.occurred_at", str(exc)) from exc
    payload = {k: v for k, v in raw.items() if k != "client_id"}  # the encoder sorts the keys
    payload_hash = hashlib.sha256(_HASH_JSON.encode(payload).encode()).hexdigest()[:PAYLOAD_HASH_KEPT]
    total, thinking = event_tokens(content, parts, type_=etype, data=data)
    return EventSpec(
        type=etype, role=strings["role"], content=content, parts=parts, data=data,
        run_id=strings["run_id"], call_id=strings["call_id"], step=strings["step"],
        anchor=strings["anchor"], client_id=strings["client_id"] or None, visible=visible,
        occurred_at=occurred_at, payload_hash=payload_hash, token_count=total,
        thinking_tokens=thinking,
    )


def event_specs(events: Any, *, allow_empty: bool = False) -> list[EventSpec]:
    """A batch under `events` validated: a list (non-empty unless allow_empty) of at most
    MAX_EVENTS_PER_BATCH events."""
    if not isinstance(events, list) or not (events or allow_empty):
        shape = "list" if allow_empty else "non-empty list"
        raise InvalidInput(f"events must be a {shape}.", details={"events": shape})
    max_batch = settings.CONTEXTSTORE["MAX_EVENTS_PER_BATCH"]
    if len(events) > max_batch:
        raise PayloadTooLarge(f"At most {max_batch} events per batch; got {len(events)}.",
                              details={"events": f"at most {max_batch} per batch"})
    return [event_spec(raw, f"events[{i}]") for i, raw in enumerate(events)]
