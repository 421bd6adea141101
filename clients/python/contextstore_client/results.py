"""What the API answers, as dataclasses; fields a newer server adds are ignored."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

D = TypeVar("D", bound="DataclassInstance")


def _build(cls: type[D], data: dict[str, Any], **extra: Any) -> D:
    """A result dataclass from a JSON object; fields the client does not know are ignored so
    newer servers stay compatible."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names}, **extra)


@dataclass
class Session:
    id: int
    key: str
    user_id: str = ""
    agent: str = ""
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    archived: bool = False
    created_at: str | None = None
    updated_at: str | None = None
    last_activity_at: str | None = None
    thread_count: int = 0
    event_count: int = 0
    error_count: int = 0
    token_total: int = 0
    cost_total: float = 0.0
    created: bool = False  # set by upsert_session: True when this call created it


@dataclass
class Thread:
    id: int
    session: int
    session_key: str
    name: str
    user_id: str = ""
    parent: int | None = None
    fork_start_position: int | None = None  # inclusive
    fork_end_position: int | None = None  # inclusive
    revision: int = 0
    iteration: int = 0
    max_history_size: int = 10
    summary: str = ""
    summarizer: dict[str, Any] | None = None
    system_prompt: str = ""
    last_seq: int = 0
    event_count: int = 0
    token_total: int = 0
    active_event_count: int = 0
    active_tokens: int = 0
    last_event_at: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


@dataclass
class Event:
    id: int
    seq: int
    type: str
    position: int = 0
    role: str = ""
    content: str = ""
    parts: list[Any] | None = None
    data: Any = None
    run_id: str | None = None
    call_id: str = ""
    step: str = ""
    anchor: str = ""
    client_id: str | None = None
    token_count: int = 0
    visible: bool = True
    status: str = "active"
    collapse: int | None = None
    occurred_at: str | None = None
    created_at: str | None = None


@dataclass
class AppendedEvent:
    seq: int
    id: int
    token_count: int
    client_id: str | None


@dataclass
class Collapse:
    id: int
    thread: int
    start_position: int  # working-context positions, both ends inclusive
    end_position: int
    summary_event: Event
    source: str = ""
    actor: str = ""
    event_count: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    provenance: dict[str, Any] = field(default_factory=dict)
    job: str | None = None
    created_at: str | None = None
    undone_at: str | None = None


@dataclass
class Clear:
    """One clear-context: how many events it took out and the summary it emptied."""

    id: int
    thread: int
    actor: str = ""
    summary: str = ""
    event_count: int = 0
    tokens: int = 0
    created_at: str | None = None
    undone_at: str | None = None


@dataclass
class Block:
    name: str
    value: str | None = None
    expr: str | None = None
    placement: str = "suffix"
    order: int = 0
    version: int = 1
    token_count: int = 0
    created_at: str | None = None
    updated_at: str | None = None


@dataclass
class State:
    state: dict[str, Any]
    memory: list[dict[str, Any]]
    revision: int
    iteration: int = 0
    current_input: Any = None
    original_input: Any = None
    max_history_size: int = 10
    summary: str = ""
    last_results: dict[str, Any] = field(default_factory=dict)  # clientai step results


@dataclass
class StateRevision:
    revision: int
    state: dict[str, Any]
    memory: list[dict[str, Any]]
    reason: str = ""
    actor: str = ""
    created_at: str | None = None


@dataclass
class Context:
    """A render. `messages` (and `system` for format="anthropic") go to the model as they are;
    `render_id` names its render record (log it with the call: ThreadHandle.log_llm_call)."""

    messages: list[dict[str, Any]]
    stats: dict[str, Any]
    format: str = "raw"
    system: list[dict[str, Any]] | None = None
    render_id: str | None = None


@dataclass
class Window:
    events: list[Event]
    covers_all: bool


@dataclass
class Run:
    id: int
    run_id: str
    thread: int
    status: str
    input: Any = None
    step_results: dict[str, Any] = field(default_factory=dict)
    iteration: int = 0
    error: str = ""
    started_at: str | None = None
    ended_at: str | None = None
    duration_ms: int | None = None
    event_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


@dataclass
class ProviderState:
    name: str
    state: Any
    version: int = 1
    updated_at: str | None = None


@dataclass
class Memory:
    id: int
    content: str
    user_id: str = ""
    key: str | None = None
    data: Any = None
    source_event: int | None = None
    created_at: str | None = None
    updated_at: str | None = None
    created: bool = False


@dataclass
class Job:
    id: str
    kind: str
    status: str
    thread: int
    params: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    error: str = ""
    created_at: str | None = None
    started_at: str | None = None
    finished_at: str | None = None


def _event(data: dict[str, Any]) -> Event:
    return _build(Event, data)


def _collapse(data: dict[str, Any]) -> Collapse:
    return _build(Collapse, {**data, "summary_event": _event(data["summary_event"])})


def _state(data: dict[str, Any]) -> State:
    return _build(State, data)


@dataclass
class SyncItem:
    """One item of a loaded working context: `key` names it in every later save."""

    key: str
    own: bool  # False: added by a person, a worker or another framework
    digest: str
    event: Event


@dataclass
class SyncLoad:
    revision: int
    state: dict[str, Any]
    summary: str
    document: Any
    items: list[SyncItem]
    rendered: Any = None  # the same moment in a framework's own format (format="peteos")


def _context(data: dict[str, Any]) -> Context:
    return Context(messages=data["messages"], stats=data["stats"], format=data["format"],
                   system=data.get("system"), render_id=data.get("render_id"))


def _rebuilt(data: dict[str, Any]) -> Context:
    return Context(messages=data["messages"], stats={k: data[k] for k in (
        "max_tokens", "total_tokens", "prefix_hash", "fits")}, format=data["format"],
        system=data.get("system"), render_id=data["id"])
