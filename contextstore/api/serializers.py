"""Output serializers (what the API returns) and small input serializers (what it accepts).

Input serializers check shapes and give per-field details; the services check meaning.
Events are serialized by hand in `EventSerializer.to_representation`: a batch can hold
thousands and DRF's per-field machinery would cost more than the database work.
"""

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from django.core.validators import ProhibitNullCharactersValidator, RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from contextstore.api.renderers import StoredJSON
from contextstore.documents import DOCUMENT_DEFAULTS, check_object
from contextstore.errors import InvalidInput
from contextstore.eventspec import EVENT_TYPES, STRING_FIELDS, TYPE_MAX_LENGTH
from contextstore.models import (
    Clear,
    Collapse,
    ContextBlock,
    Event,
    Job,
    Memory,
    ProviderState,
    Run,
    Session,
    StateRevision,
    Thread,
)
from contextstore.ranges import POSITION_MAX
from contextstore.selectors.scores import FILTER_HELP, ScoreFilter, parse_score_filter
from contextstore.selectors.threads import THREAD_DATA_FIELDS

JSON_ANY = serializers.JSONField  # any JSON value (the models keep it as ordered text)


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JSONObject(serializers.JSONField):
    """A JSON object: what the services take as a state, a merge patch or metadata. Anything
    else is refused here as documents.check_object words it, naming the field (or
    `object_name`), so every door that takes one answers alike."""

    def __init__(self, *, object_name: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.object_name = object_name

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        check_object(self.object_name or self.field_name or "value", value)
        return value


# Event types the schema promises: printable ASCII and Latin-1 without whitespace. eventspec
# accepts any printable Unicode: exactly ^[^\p{C}\p{Z}]+$ in ECMA 262's Unicode mode, but a
# schema-driven client cannot draw from it (schemathesis 4.32 approximates \p classes: 99 of 300
# strings it drew were unprintable), so the schema promises this part of it.
EVENT_TYPE_PATTERN = "^[!-~\\u00a1-\\u00ac\\u00ae-\\u00ff]+$"


class AgentText(serializers.CharField):
    """Agent text: any valid Unicode string, NUL included (contextstore.fields stores it).
    DRF's CharField refuses NUL, which names and ids keep doing."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = [v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)]


# Largest seq, position or count a query may name: within a signed 64-bit column with room to
# spare, so no database sees an integer it cannot hold.
SEQ_MAX = POSITION_MAX


# ---------------------------------------------------------------- sessions and threads

class SessionSerializer(serializers.ModelSerializer):
    metadata = JSON_ANY()
    cost_total = serializers.DecimalField(max_digits=14, decimal_places=6, coerce_to_string=False)

    class Meta:
        model = Session
        fields = [
            "id", "key", "user_id", "agent", "title", "metadata", "archived", "created_at",
            "updated_at", "last_activity_at", "thread_count", "event_count", "error_count",
            "token_total", "cost_total",
        ]
        read_only_fields = fields


class SessionUpsertSerializer(serializers.Serializer):
    # Identifiers are kept verbatim (no trimming): they are the agent's keys, not prose.
    key = serializers.CharField(max_length=255, trim_whitespace=False)
    user_id = serializers.CharField(max_length=255, required=False, allow_blank=True, default="",
                                    trim_whitespace=False)
    agent = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    title = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    metadata = serializers.DictField(required=False, allow_null=True, default=None)


class SessionPatchSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=500, required=False, allow_blank=True)
    agent = serializers.CharField(max_length=200, required=False, allow_blank=True)
    metadata = serializers.DictField(required=False)
    archived = serializers.BooleanField(required=False)


class SessionQuerySerializer(serializers.Serializer):
    user_id = serializers.CharField(required=False, allow_blank=True)
    agent = serializers.CharField(required=False)
    q = serializers.CharField(required=False)
    archived = serializers.BooleanField(required=False, allow_null=True, default=None)
    score = serializers.CharField(required=False, help_text=f"Sessions holding a score: {FILTER_HELP}.")

    def validate_score(self, value: str) -> ScoreFilter:
        try:
            return parse_score_filter(value)
        except InvalidInput as exc:
            raise serializers.ValidationError(exc.message) from None


RANGE_HELP = "Working-context position; ranges include both ends."


class ThreadSerializer(serializers.ModelSerializer):
    session_key = serializers.CharField(source="session.key", read_only=True)
    user_id = serializers.CharField(source="session.user_id", read_only=True)
    summarizer = JSON_ANY(allow_null=True)
    # Fields of the thread's document (Thread.document), read through the model's attributes.
    iteration = serializers.IntegerField(read_only=True)
    max_history_size = serializers.IntegerField(read_only=True)
    summary = serializers.CharField(read_only=True)
    system_prompt = serializers.CharField(read_only=True)
    fork_start_position = serializers.IntegerField(allow_null=True, help_text=RANGE_HELP)
    fork_end_position = serializers.IntegerField(allow_null=True, help_text=RANGE_HELP)

    class Meta:
        model = Thread
        fields = [
            "id", "session", "session_key", "user_id", "name", "parent", "fork_start_position",
            "fork_end_position", "revision", "iteration", "max_history_size", "summary", "summarizer",
            "system_prompt", "last_seq", "event_count", "token_total", "active_event_count",
            "active_tokens", "last_event_at", "created_at", "updated_at",
        ]
        read_only_fields = fields

    def to_representation(self, t: Thread) -> dict[str, Any]:
        # By hand, like EventSerializer: every agent step reads its thread, and building the
        # ModelSerializer's fields cost more than the query. The declared fields above are the
        # schema; test_thread_and_state_serializers_match_drf pins this to DRF's output.
        return thread_data([_attribute(t, name) for name in THREAD_DATA_FIELDS])


_DOCUMENT_DEFAULTS = dict(DOCUMENT_DEFAULTS)


def _attribute(obj: Any, path: str) -> Any:
    """The value a values() lookup names (`session__key`), read from the instance."""
    for name in path.split("__"):
        obj = getattr(obj, name)
    return obj


def thread_data(row: Sequence[Any]) -> dict[str, Any]:
    """A thread as the API prints it (ThreadSerializer's JSON), from its values of
    selectors.threads.THREAD_DATA_FIELDS, in that order: GET /threads/{id}/ reads them as one
    row, every other answer with a thread reads them off the instance, so both print the same."""
    t = dict(zip(THREAD_DATA_FIELDS, row, strict=True))
    document, start, end = t["document"], t["fork_start_position"], t["fork_end_position"]

    def field(name: str) -> Any:  # as Thread's attribute of that name reads it (models.InDocument)
        return document.get(name, _DOCUMENT_DEFAULTS[name])

    return {
        "id": t["id"], "session": t["session_id"], "session_key": t["session__key"],
        "user_id": t["session__user_id"], "name": t["name"], "parent": t["parent_id"],
        "fork_start_position": start, "fork_end_position": end,
        "revision": t["revision"], "iteration": _int(field("iteration")),
        "max_history_size": _int(field("max_history_size")),
        "summary": _str(field("summary")), "summarizer": t["summarizer"],
        "system_prompt": _str(field("system_prompt")), "last_seq": t["last_seq"],
        "event_count": t["event_count"], "token_total": t["token_total"],
        "active_event_count": t["active_event_count"], "active_tokens": t["active_tokens"],
        "last_event_at": _iso(t["last_event_at"]), "created_at": _iso(t["created_at"]),
        "updated_at": _iso(t["updated_at"]),
    }


class ThreadEnsureSerializer(serializers.Serializer):
    session_key = serializers.CharField(max_length=255, trim_whitespace=False)
    user_id = serializers.CharField(max_length=255, required=False, allow_blank=True, default="",
                                    trim_whitespace=False)
    agent = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    name = serializers.CharField(max_length=200, required=False, default="main",
                                 trim_whitespace=False)


# ---------------------------------------------------------------- events

class EventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    seq = serializers.IntegerField()
    position = serializers.IntegerField()
    type = serializers.CharField()
    role = serializers.CharField()
    content = serializers.CharField()
    parts = serializers.ListField(child=JSON_ANY(), allow_null=True)
    data = JSON_ANY(allow_null=True)  # type: ignore[assignment]  # a field (the metaclass takes it off the class)
    run_id = serializers.CharField(allow_null=True)
    call_id = serializers.CharField()
    step = serializers.CharField()
    anchor = serializers.CharField()
    client_id = serializers.CharField(allow_null=True)
    token_count = serializers.IntegerField()
    visible = serializers.BooleanField()
    status = serializers.ChoiceField(choices=Event.Status.choices)
    collapse = serializers.IntegerField(allow_null=True)
    occurred_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()

    def to_representation(self, e: Event) -> dict[str, Any]:
        return event_data(e)


def _stored(text: str | None) -> StoredJSON | None:
    return None if text is None else StoredJSON(text)


# An event as the API prints it, once for every answer: each field, the column of a row of
# values that holds it (selectors.agent_sessions reads such rows: EVENT_ROW_FIELDS, run__run_id
# and EVENT_ROW_TEXT, where parts and data are their stored JSON text, which the renderer copies
# into the answer as it is), and what makes the field of that value (None: as it is).
EVENT_ROW_VALUES: dict[str, tuple[str, Callable[[Any], Any] | None]] = {
    "id": ("id", None), "seq": ("seq", None), "position": ("position", None), "type": ("type", None),
    "role": ("role", None), "content": ("content", None), "parts": ("parts_text", _stored),
    "data": ("data_text", _stored), "run_id": ("run__run_id", None), "call_id": ("call_id", None),
    "step": ("step", None), "anchor": ("anchor", None), "client_id": ("client_id", None),
    "token_count": ("token_count", None), "visible": ("visible", None), "status": ("status", None),
    "collapse": ("collapse_id", None), "occurred_at": ("occurred_at", lambda v: _iso(v)),
    "created_at": ("created_at", lambda v: _iso(v)),
}
_PARSED = {"parts_text": "parts", "data_text": "data"}  # an instance's parts and data: values
_EVENT_PRINTED = [(name, column, make) for name, (column, make) in EVENT_ROW_VALUES.items()]
_INSTANCE_PRINTED = [(name, column, None if column in _PARSED else make)
                     for name, column, make in _EVENT_PRINTED]


def _printed(row: dict[str, Any], spec: list[tuple[str, str, Callable[[Any], Any] | None]]
             ) -> dict[str, Any]:
    return {name: make(row[column]) if make else row[column] for name, column, make in spec}


def event_rows(rows: list[Sequence[Any]], columns: Sequence[str], fields: Sequence[str] | None = None,
               ) -> list[dict[str, Any]]:
    """Events as the API prints them, from rows of EVENT_ROW_VALUES' columns (`columns` names
    the rows' values in order): every field or (fields) only those."""
    spec = [(name, columns.index(column), make) for name, (column, make) in
            (EVENT_ROW_VALUES.items() if fields is None else ((n, EVENT_ROW_VALUES[n]) for n in fields))]
    return [{name: make(row[i]) if make else row[i] for name, i, make in spec} for row in rows]


def event_data(e: Event) -> dict[str, Any]:
    """An Event instance as the API prints it (EventSerializer's JSON): its row, printed by the
    same table, parts and data being values already."""
    row = {column: getattr(e, _PARSED.get(column, column)) for _, column, _ in _EVENT_PRINTED
           if column != "run__run_id"}
    row["run__run_id"] = e.run.run_id if e.run else None
    return _printed(row, _INSTANCE_PRINTED)


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


class EventInSerializer(serializers.Serializer):
    """One event to add, for the schema only: no endpoint validates with it. The definition is
    eventspec.py's (its lengths are these), which every endpoint that takes events checks with,
    so a bad event is refused in one shape, its place in `details`."""

    schema_rules: dict[str, Any] = {"additionalProperties": False}  # eventspec refuses unknown fields

    type = serializers.CharField(
        max_length=TYPE_MAX_LENGTH, validators=[RegexValidator(EVENT_TYPE_PATTERN)],
        help_text=f"Any name of 1-{TYPE_MAX_LENGTH} printable characters without whitespace or "
                  f"control characters. The documented types ({', '.join(EVENT_TYPES)}) keep their "
                  "meaning; any other name (a framework's own vocabulary) is stored and shown "
                  "as a generic entry.")
    role = serializers.CharField(max_length=STRING_FIELDS["role"], required=False, allow_blank=True)
    content = AgentText(required=False, allow_blank=True, allow_null=True)
    parts = serializers.ListField(child=JSON_ANY(), required=False, allow_null=True)
    data = JSON_ANY(required=False, allow_null=True)  # type: ignore[assignment]  # a field (the metaclass takes it off the class)
    run_id = serializers.CharField(max_length=STRING_FIELDS["run_id"], required=False,
                                   allow_blank=True, allow_null=True)
    call_id = serializers.CharField(max_length=STRING_FIELDS["call_id"], required=False,
                                    allow_blank=True, allow_null=True)
    step = serializers.CharField(max_length=STRING_FIELDS["step"], required=False,
                                 allow_blank=True, allow_null=True)
    anchor = serializers.CharField(max_length=STRING_FIELDS["anchor"], required=False,
                                   allow_blank=True, allow_null=True)
    client_id = serializers.CharField(max_length=STRING_FIELDS["client_id"], required=False,
                                      allow_blank=True, allow_null=True,
                                      help_text="Idempotency key, unique per thread.")
    visible = serializers.BooleanField(required=False, allow_null=True)
    occurred_at = serializers.DateTimeField(
        required=False, allow_null=True,
        help_text="ISO 8601; naive means UTC. Must fall within years 1-9999 once in UTC.")


class EventBatchSerializer(serializers.Serializer):
    schema_rules = {"additionalProperties": False, "properties": {"events": {"minItems": 1}}}

    events = EventInSerializer(many=True, allow_empty=False)


class AppendedEventSerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    id = serializers.IntegerField()
    token_count = serializers.IntegerField()
    client_id = serializers.CharField(allow_null=True)


class AppendResultSerializer(serializers.Serializer):
    events = AppendedEventSerializer(many=True)
    created = serializers.IntegerField(help_text="How many were new (the rest were replays).")


class EventQuerySerializer(serializers.Serializer):
    type = serializers.ListField(
        child=serializers.CharField(allow_blank=True), required=False,
        help_text="Event types; repeat for several (`?type=Message&type=Error`), each value one "
                  "whole name, commas included. A single value is read as the older "
                  "comma-separated list (`?type=Message,Error`): to ask for one name holding a "
                  "comma alone, repeat it.")
    q = serializers.CharField(required=False, help_text="Case-insensitive text search.")
    regex = serializers.CharField(required=False, help_text="Case-insensitive regular expression.")
    run_id = serializers.CharField(required=False)
    call_id = serializers.CharField(required=False)
    step = serializers.CharField(required=False)
    after_seq = serializers.IntegerField(required=False, min_value=-SEQ_MAX, max_value=SEQ_MAX)
    before_seq = serializers.IntegerField(required=False, min_value=-SEQ_MAX, max_value=SEQ_MAX)
    status = serializers.ChoiceField(choices=["all", *Event.Status.values], required=False,
                                     default="active")
    visible = serializers.BooleanField(required=False, allow_null=True, default=None)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=SEQ_MAX,
                                     help_text="Keep only the most recent matches.")
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=1000)

    def validate_type(self, values: list[str]) -> list[str]:
        """The type names asked for: each repeated value whole, a single one split at commas."""
        if len(values) == 1:
            values = values[0].split(",")
        return [v.strip() for v in values if v.strip()]


class EventPageSerializer(serializers.Serializer):
    results = EventSerializer(many=True)
    next = serializers.URLField(allow_null=True)


# ---------------------------------------------------------------- collapses and blocks

class CollapseSerializer(serializers.ModelSerializer):
    summary_event = EventSerializer()
    provenance = JSON_ANY()
    start_position = serializers.IntegerField(help_text=RANGE_HELP)
    end_position = serializers.IntegerField(help_text=RANGE_HELP)

    class Meta:
        model = Collapse
        fields = [
            "id", "thread", "start_position", "end_position", "source",
            "actor", "event_count",
            "tokens_before", "tokens_after", "provenance", "summary_event", "job", "created_at",
            "undone_at",
        ]
        read_only_fields = fields


# Text with something besides whitespace: a character Python's str.strip() keeps (an
# unanchored pattern: it holds one somewhere).
NOT_BLANK = ("[^\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f"
             "\\u205f\\u3000]")


def _only(value: Any) -> dict[str, Any]:
    """A property that must hold `value`. Wrapped in allOf: drf-spectacular turns an enum
    beside `properties` into a component named after the field, and two such enums of one
    field ({"enum": [true]} and {"enum": [false]}) came out as the same component."""
    return {"allOf": [{"enum": [value]}]}


WIDEN_HELP = ("A range that would split a tool call from its results is refused (400 "
              "splits_tool_exchange, naming them); true grows it to the whole exchange instead.")


class CollapseInSerializer(serializers.Serializer):
    start_position = serializers.IntegerField(min_value=1, max_value=SEQ_MAX, help_text=RANGE_HELP)
    end_position = serializers.IntegerField(min_value=1, max_value=SEQ_MAX, help_text=RANGE_HELP)
    summary_text = AgentText(required=False, trim_whitespace=False)
    summarize = serializers.BooleanField(required=False, default=False)
    widen = serializers.BooleanField(required=False, default=False, help_text=WIDEN_HELP)

    schema_rules = {
        "description": "A summary_text, or summarize: true. start_position must not be after "
                       "end_position.",
        "x-at-most": {"start_position": "end_position"},
        "allOf": [
            {"oneOf": [
                {"required": ["summary_text"], "properties": {
                    "summary_text": {"minLength": 1, "pattern": NOT_BLANK},
                    "summarize": _only(False)}},
                {"required": ["summarize"], "properties": {
                    "summarize": _only(True), "summary_text": {"maxLength": 0}}},
            ]},
        ],
    }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("summarize") == bool(attrs.get("summary_text")):
            raise serializers.ValidationError(
                {"summary_text": "give summary_text, or summarize: true (not both)"})
        return attrs


class JobAcceptedSerializer(serializers.Serializer):
    job_id = serializers.UUIDField()


class BlockSerializer(serializers.ModelSerializer):
    class Meta:
        model = ContextBlock
        fields = ["name", "value", "expr", "placement", "order", "version", "token_count",
                  "created_at", "updated_at"]
        read_only_fields = fields


class BlockListSerializer(serializers.Serializer):
    results = BlockSerializer(many=True)
    next = serializers.URLField(allow_null=True)


class BlockInSerializer(serializers.Serializer):
    schema_rules = {"description": "A fixed value or an expr, not both.",
                    "not": {"required": ["value", "expr"],
                            "properties": {"value": {"type": "string"}, "expr": {"type": "string"}}}}

    value = AgentText(required=False, allow_null=True, allow_blank=True, trim_whitespace=False,
                      help_text="Fixed text; null suppresses.")
    expr = AgentText(required=False, allow_null=True, trim_whitespace=False,
                     help_text="A template evaluated against the thread's state.")
    placement = serializers.ChoiceField(choices=ContextBlock.Placement.choices, required=False)
    order = serializers.IntegerField(required=False, min_value=-(2**31), max_value=2**31 - 1)


# ---------------------------------------------------------------- state

def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _dict(value: Any) -> dict[str, Any] | None:
    return None if value is None else {str(k): v for k, v in value.items()}


class StateSerializer(serializers.ModelSerializer):
    state = serializers.DictField()
    last_results = serializers.DictField()
    memory = serializers.ListField(child=serializers.DictField())
    current_input = JSON_ANY(allow_null=True)
    original_input = JSON_ANY(allow_null=True)
    iteration = serializers.IntegerField()
    max_history_size = serializers.IntegerField()
    summary = serializers.CharField()

    class Meta:
        model = Thread
        fields = ["state", "memory", "iteration", "current_input", "original_input",
                  "max_history_size", "summary", "revision", "last_results"]
        read_only_fields = fields

    def to_representation(self, t: Thread) -> dict[str, Any]:
        # By hand (see ThreadSerializer): the state read is on every agent step.
        memory = t.memory
        return {
            "state": _dict(t.state),
            "memory": None if memory is None else [None if m is None else _dict(m) for m in memory],
            "iteration": _int(t.iteration), "current_input": t.current_input,
            "original_input": t.original_input, "max_history_size": _int(t.max_history_size),
            "summary": _str(t.summary), "revision": t.revision, "last_results": _dict(t.last_results),
        }


class StateWriteSerializer(serializers.Serializer):
    state = JSONObject(required=False, help_text="PUT: the new object; PATCH: a JSON merge patch.")
    memory = serializers.ListField(child=serializers.DictField(), required=False)
    summary = AgentText(required=False, allow_blank=True, trim_whitespace=False,
                        help_text="The compacted summary (AgentScope setSummary).")
    reason = serializers.CharField(required=False, allow_blank=True, max_length=500)


class StateRevisionSerializer(serializers.ModelSerializer):
    """A revision in the list: its state and memory (the shape clients have always read)."""

    state = serializers.SerializerMethodField()
    memory = serializers.SerializerMethodField()
    snapshot = serializers.SerializerMethodField(
        help_text="Whether this revision stores the whole document (else a patch).")

    class Meta:
        model = StateRevision
        fields = ["revision", "state", "memory", "reason", "actor", "created_at", "size",
                  "snapshot"]
        read_only_fields = fields

    def _document(self, obj: StateRevision) -> dict[str, Any]:
        return self.context["documents"][obj.revision]

    def get_state(self, obj: StateRevision) -> dict[str, Any]:
        return self._document(obj)["state"]

    def get_memory(self, obj: StateRevision) -> list[dict[str, Any]]:
        return self._document(obj)["memory"]

    def get_snapshot(self, obj: StateRevision) -> bool:
        return obj.base == obj.revision


class RevisionDetailSerializer(serializers.Serializer):
    revision = serializers.IntegerField()
    reason = serializers.CharField()
    actor = serializers.CharField()
    created_at = serializers.DateTimeField()
    size = serializers.IntegerField(help_text="Bytes this revision stores.")
    snapshot = serializers.BooleanField()
    document = serializers.DictField(help_text="The whole document at this revision.")
    diff = serializers.ListField(
        child=serializers.DictField(),
        help_text="RFC 6902 operations from the previous revision to this one.")
    changed = serializers.ListField(child=serializers.CharField(),
                                    help_text="Document fields this revision changed.")


# ---------------------------------------------------------------- clientai

class InputSerializer(serializers.Serializer):
    input = JSON_ANY(allow_null=True)
    schema_rules = {"properties": {"timestamp": {"format": "date-time"}}}

    timestamp = serializers.CharField(
        required=False, allow_null=True, trim_whitespace=False,
        help_text="The agent's time for the history entry (ISO 8601 with offset); "
                  "absent: the server's.")

    def validate_timestamp(self, value: str | None) -> str | None:
        """The agent's time as ISO 8601, kept with its offset (services.clientai trusts it)."""
        if value is None:
            return None
        try:
            return datetime.fromisoformat(value).isoformat()
        except ValueError:
            raise InvalidInput("timestamp must be an ISO 8601 date-time.",
                               details={"timestamp": value}) from None


class StepResultInSerializer(serializers.Serializer):
    step = serializers.CharField(allow_blank=True, trim_whitespace=False,
                                 help_text="Any string, as in clientai.")
    result = JSON_ANY(allow_null=True)


class StepResultSerializer(serializers.Serializer):
    step = serializers.CharField()
    result = JSON_ANY(allow_null=True)


class IterationSerializer(serializers.Serializer):
    iteration = serializers.IntegerField()


class MaxHistorySizeSerializer(serializers.Serializer):
    size = serializers.IntegerField(min_value=0, max_value=2**31 - 1)


class HistoryQuerySerializer(serializers.Serializer):
    n = serializers.IntegerField(required=False, min_value=0, max_value=SEQ_MAX)
    raw = serializers.BooleanField(required=False, default=False)


# ---------------------------------------------------------------- render, windows, peteos

class ContextQuerySerializer(serializers.Serializer):
    max_tokens = serializers.IntegerField(
        required=False, min_value=1, max_value=10_000_000,
        help_text="Default: the thread's context window minus its reserve_output.")
    strip_thinking = serializers.BooleanField(required=False, default=False)
    format = serializers.ChoiceField(
        choices=["raw", "openai", "anthropic"], required=False, default="raw",
        help_text="raw: contextstore messages with sections; openai: Chat Completions messages; "
                  "anthropic: `system` blocks plus Messages API turns.")
    on_oversize = serializers.ChoiceField(
        choices=["skip", "stop"], required=False, default="skip",
        help_text="History is kept in whole turns (a user message through everything before the "
                  "next): a turn larger than the remaining budget is skipped (older turns still "
                  "come) or ends the history there.")
    start_chunk = serializers.FloatField(
        required=False, min_value=0.0, max_value=1.0,
        help_text="Stable starts: the history's start moves forward only, by this share of the "
                  "history budget at a time, so the provider's prompt cache holds across calls; "
                  "0 slides it turn by turn. Default: the server's RENDER_START_CHUNK_PERCENT.")
    tools_hash = serializers.RegexField(
        r"^[0-9a-f]{64}$", required=False,
        help_text="The tool definitions the request will send, named by the sha256 of their "
                  "canonical JSON as the server keeps a logged call's `data.tools` (sorted keys, "
                  "no spaces): counted in the budget and in stats.total_tokens "
                  "(stats.sections.tools). Unknown to this workspace: 404.")
    record = serializers.BooleanField(
        required=False, default=False,
        help_text="Keep a render record (write scope); the response carries its render_id, "
                  "GET /api/v1/renders/{render_id}/ rebuilds these messages later.")


class ContextSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=["raw", "openai", "anthropic"])
    system = serializers.ListField(child=serializers.DictField(), required=False,
                                   help_text="anthropic only: the system text blocks.")
    messages = serializers.ListField(child=serializers.DictField())
    stats = serializers.DictField(help_text="tokens per section, fits, prefix_hash, skipped "
                                            "[{seq, position, tokens, reason}], ...")
    render_id = serializers.UUIDField(required=False, allow_null=True,
                                      help_text="The render record, when record=true.")


class WindowQuerySerializer(serializers.Serializer):
    count = serializers.IntegerField(required=False, min_value=0, max_value=1_000_000)
    max_tokens = serializers.IntegerField(required=False, min_value=0, max_value=10_000_000)

    schema_rules = {"oneOf": [{"required": ["count"]}, {"required": ["max_tokens"]}],
                    "additionalProperties": False}

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("count" in attrs) == ("max_tokens" in attrs):
            raise serializers.ValidationError({"count": "give count or max_tokens (one of them)"})
        return attrs


class WindowSerializer(serializers.Serializer):
    events = EventSerializer(many=True)
    covers_all = serializers.BooleanField()


class ForkInSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    start_position = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=SEQ_MAX,
        help_text="First working-context position copied (inclusive); none = from the start.")
    end_position = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=SEQ_MAX,
        help_text="Last working-context position copied (inclusive); none = to the end.")
    system_prompt = AgentText(required=False, allow_null=True, default=None, allow_blank=True,
                              trim_whitespace=False)
    widen = serializers.BooleanField(required=False, default=False, help_text=WIDEN_HELP)

    schema_rules = {
        "description": "start_position must not be after end_position, nor either past the "
                       "thread's last position.",
        "x-at-most": {"start_position": "end_position"},
    }


class ClearSerializer(serializers.ModelSerializer):
    class Meta:
        model = Clear
        fields = ["id", "thread", "actor", "summary", "event_count", "tokens", "created_at",
                  "undone_at"]
        read_only_fields = fields


class ClearedSerializer(serializers.Serializer):
    cleared = serializers.IntegerField(help_text="How many events left the working context.")
    clear = ClearSerializer(help_text="The record un-clear takes back: POST "
                                      "/threads/{id}/clears/{clear}/undo/")


class UnclearedSerializer(serializers.Serializer):
    restored = serializers.IntegerField(help_text="How many events came back.")
    summary_restored = serializers.BooleanField(
        help_text="False when a newer summary was written since the clear (it is kept).")
    clear = ClearSerializer()


class TokensSerializer(serializers.Serializer):
    total_tokens = serializers.IntegerField()


class ExportQuerySerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=["contextstore", "peteos"], required=False,
                                     default="contextstore")


# Text that is not blank once trimmed and holds no NUL (both refused): one pattern, as a schema
# takes one.
NOT_BLANK_NO_NUL = f"^[^\\u0000]*[^\\u0000{NOT_BLANK[2:]}[^\\u0000]*$"


class ImportQuerySerializer(serializers.Serializer):
    # trimmed, so whitespace alone is blank: the schema says so
    session_key = serializers.CharField(required=False, max_length=255,
                                        validators=[RegexValidator(NOT_BLANK_NO_NUL)])
    user_id = serializers.CharField(required=False, allow_blank=True, max_length=255)
    name = serializers.CharField(required=False, max_length=200,
                                 validators=[RegexValidator(NOT_BLANK_NO_NUL)])


# ---------------------------------------------------------------- runs, providers, memories, jobs

class RunSerializer(serializers.ModelSerializer):
    input = JSON_ANY(allow_null=True)
    step_results = serializers.DictField()
    duration_ms = serializers.IntegerField(allow_null=True, read_only=True)
    cost = serializers.DecimalField(max_digits=14, decimal_places=6, coerce_to_string=False)

    class Meta:
        model = Run
        fields = ["id", "run_id", "thread", "input", "step_results", "iteration", "status",
                  "error", "started_at", "ended_at", "duration_ms", "event_count",
                  "input_tokens", "output_tokens", "cost"]
        read_only_fields = fields


class RunFinishSerializer(serializers.Serializer):
    error = AgentText(required=False, allow_blank=True, default="")


class ProviderStateSerializer(serializers.ModelSerializer):
    name = serializers.CharField(source="provider")
    state = JSON_ANY(allow_null=True)

    class Meta:
        model = ProviderState
        fields = ["name", "state", "version", "updated_at"]
        read_only_fields = fields


class ProviderStateInSerializer(serializers.Serializer):
    state = JSON_ANY(allow_null=True)


class MemorySerializer(serializers.ModelSerializer):
    data = JSON_ANY(allow_null=True)  # type: ignore[assignment]  # a field (the metaclass takes it off the class)

    class Meta:
        model = Memory
        fields = ["id", "user_id", "key", "content", "data", "source_event", "source_expired",
                  "created_at", "updated_at"]
        read_only_fields = fields


class MemoryInSerializer(serializers.Serializer):
    user_id = serializers.CharField(max_length=255, required=False, allow_blank=True, default="",
                                    trim_whitespace=False)
    key = serializers.CharField(max_length=200, required=False, allow_null=True, default=None,
                                trim_whitespace=False)
    content = AgentText(trim_whitespace=False)
    data = JSON_ANY(required=False, allow_null=True, default=None)  # type: ignore[assignment]  # a field (the metaclass takes it off the class)

    def validate_content(self, content: str) -> str:
        if not content.strip():
            raise InvalidInput("content is required.", details={"content": "required"})
        return content


class MemoryQuerySerializer(serializers.Serializer):
    user_id = serializers.CharField(required=False, allow_blank=True)
    q = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100, default=20)


class JobSerializer(serializers.ModelSerializer):
    params = JSON_ANY()
    result = JSON_ANY(allow_null=True)

    class Meta:
        model = Job
        fields = ["id", "kind", "status", "thread", "params", "result", "error", "created_at",
                  "started_at", "finished_at"]
        read_only_fields = fields
