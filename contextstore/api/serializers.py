"""Output serializers (what the API returns) and small input serializers (what it accepts).

Input serializers check shapes and give per-field details; the services check meaning.
Events are serialized by hand in `EventSerializer.to_representation`: a batch can hold
thousands and DRF's per-field machinery would cost more than the database work.
"""

from typing import Any

from rest_framework import serializers

from contextstore.models import (
    EVENT_TYPES,
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

JSON_ANY = serializers.JSONField  # any JSON value (the models keep it as ordered text)


# ---------------------------------------------------------------- errors (for the schema)

class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.DictField()


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()


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


class ThreadSerializer(serializers.ModelSerializer):
    session_key = serializers.CharField(source="session.key", read_only=True)
    user_id = serializers.CharField(source="session.user_id", read_only=True)
    summarizer = JSON_ANY(allow_null=True)

    class Meta:
        model = Thread
        fields = [
            "id", "session", "session_key", "user_id", "name", "parent", "fork_start_seq",
            "fork_end_seq", "revision", "iteration", "max_history_size", "summary", "summarizer",
            "system_prompt", "last_seq", "event_count", "token_total", "active_event_count",
            "active_tokens", "last_event_at", "created_at", "updated_at",
        ]
        read_only_fields = fields


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
    data = JSON_ANY(allow_null=True)
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
        return {
            "id": e.pk, "seq": e.seq, "position": e.position, "type": e.type, "role": e.role,
            "content": e.content, "parts": e.parts, "data": e.data,
            "run_id": e.run.run_id if e.run_id else None, "call_id": e.call_id, "step": e.step,
            "anchor": e.anchor, "client_id": e.client_id, "token_count": e.token_count,
            "visible": e.visible, "status": e.status, "collapse": e.collapse_id,
            "occurred_at": _iso(e.occurred_at), "created_at": _iso(e.created_at),
        }


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


class EventInSerializer(serializers.Serializer):
    """One event to append (documentation; the events service validates each field)."""

    type = serializers.CharField(max_length=32, help_text=f"e.g. {', '.join(EVENT_TYPES[:6])}…")
    role = serializers.CharField(max_length=32, required=False, allow_blank=True)
    content = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    parts = serializers.ListField(child=JSON_ANY(), required=False, allow_null=True)
    data = JSON_ANY(required=False, allow_null=True)
    run_id = serializers.CharField(max_length=200, required=False, allow_blank=True, allow_null=True)
    call_id = serializers.CharField(max_length=200, required=False, allow_blank=True, allow_null=True)
    step = serializers.CharField(max_length=200, required=False, allow_blank=True, allow_null=True)
    anchor = serializers.CharField(max_length=200, required=False, allow_blank=True, allow_null=True)
    client_id = serializers.CharField(max_length=200, required=False, allow_blank=True,
                                      allow_null=True, help_text="Idempotency key, unique per thread.")
    visible = serializers.BooleanField(required=False, allow_null=True)
    occurred_at = serializers.DateTimeField(required=False, allow_null=True)


class EventBatchSerializer(serializers.Serializer):
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
    type = serializers.CharField(required=False, help_text="Comma-separated event types.")
    q = serializers.CharField(required=False, help_text="Case-insensitive text search.")
    regex = serializers.CharField(required=False, help_text="Case-insensitive regular expression.")
    run_id = serializers.CharField(required=False)
    call_id = serializers.CharField(required=False)
    step = serializers.CharField(required=False)
    after_seq = serializers.IntegerField(required=False)
    before_seq = serializers.IntegerField(required=False)
    status = serializers.ChoiceField(choices=["all", *Event.Status.values], required=False,
                                     default="active")
    visible = serializers.BooleanField(required=False, allow_null=True, default=None)
    limit = serializers.IntegerField(required=False, min_value=1,
                                     help_text="Keep only the most recent matches.")
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=1000)


class EventPageSerializer(serializers.Serializer):
    results = EventSerializer(many=True)
    next = serializers.URLField(allow_null=True)


# ---------------------------------------------------------------- collapses and blocks

class CollapseSerializer(serializers.ModelSerializer):
    summary_event = EventSerializer()
    provenance = JSON_ANY()

    class Meta:
        model = Collapse
        fields = [
            "id", "thread", "start_seq", "end_seq", "source", "actor", "event_count",
            "tokens_before", "tokens_after", "provenance", "summary_event", "job", "created_at",
            "undone_at",
        ]
        read_only_fields = fields


class CollapseInSerializer(serializers.Serializer):
    start_seq = serializers.IntegerField(min_value=1)
    end_seq = serializers.IntegerField(min_value=1)
    summary_text = serializers.CharField(required=False, trim_whitespace=False)
    summarize = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["start_seq"] > attrs["end_seq"]:
            raise serializers.ValidationError({"start_seq": "must not be after end_seq"})
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
    value = serializers.CharField(required=False, allow_null=True, allow_blank=True,
                                  trim_whitespace=False, help_text="Fixed text; null suppresses.")
    expr = serializers.CharField(required=False, allow_null=True, trim_whitespace=False,
                                 help_text="A template evaluated against the thread's state.")
    placement = serializers.ChoiceField(choices=ContextBlock.Placement.choices, required=False)
    order = serializers.IntegerField(required=False, min_value=-(2**31), max_value=2**31 - 1)


# ---------------------------------------------------------------- state

class StateSerializer(serializers.ModelSerializer):
    state = serializers.DictField()
    last_results = serializers.DictField()
    memory = serializers.ListField(child=serializers.DictField())
    current_input = JSON_ANY(allow_null=True)
    original_input = JSON_ANY(allow_null=True)

    class Meta:
        model = Thread
        fields = ["state", "memory", "iteration", "current_input", "original_input",
                  "max_history_size", "summary", "revision", "last_results"]
        read_only_fields = fields


class StateWriteSerializer(serializers.Serializer):
    state = JSON_ANY(required=False, help_text="PUT: the new object; PATCH: a JSON merge patch.")
    memory = serializers.ListField(child=serializers.DictField(), required=False)
    summary = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False,
                                    help_text="The compacted summary (AgentScope setSummary).")
    reason = serializers.CharField(required=False, allow_blank=True, max_length=500)


class StateRevisionSerializer(serializers.ModelSerializer):
    state = serializers.DictField()
    memory = serializers.ListField(child=serializers.DictField())

    class Meta:
        model = StateRevision
        fields = ["revision", "state", "memory", "reason", "actor", "created_at"]
        read_only_fields = fields


# ---------------------------------------------------------------- clientai

class InputSerializer(serializers.Serializer):
    input = JSON_ANY(allow_null=True)
    timestamp = serializers.CharField(
        required=False, allow_null=True, trim_whitespace=False,
        help_text="The agent's time for the history entry (ISO 8601 with offset); "
                  "absent: the server's.")


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
    n = serializers.IntegerField(required=False, min_value=0)
    raw = serializers.BooleanField(required=False, default=False)


class HistoryTextSerializer(serializers.Serializer):
    text = serializers.CharField()


class ClearedSerializer(serializers.Serializer):
    cleared = serializers.IntegerField()


# ---------------------------------------------------------------- render, windows, peteos

class ContextQuerySerializer(serializers.Serializer):
    max_tokens = serializers.IntegerField(required=False, min_value=1, max_value=10_000_000)
    strip_thinking = serializers.BooleanField(required=False, default=False)


class ContextSerializer(serializers.Serializer):
    messages = serializers.ListField(child=serializers.DictField())
    stats = serializers.DictField()


class WindowQuerySerializer(serializers.Serializer):
    count = serializers.IntegerField(required=False, min_value=0, max_value=1_000_000)
    max_tokens = serializers.IntegerField(required=False, min_value=0, max_value=10_000_000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("count" in attrs) == ("max_tokens" in attrs):
            raise serializers.ValidationError({"count": "give count or max_tokens (one of them)"})
        return attrs


class WindowSerializer(serializers.Serializer):
    events = EventSerializer(many=True)
    covers_all = serializers.BooleanField()


class ForkInSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    start_seq = serializers.IntegerField(required=False, allow_null=True, default=None,
                                         help_text="First seq copied (inclusive).")
    end_seq = serializers.IntegerField(required=False, allow_null=True, default=None,
                                       help_text="Seq where the copy stops (exclusive).")
    system_prompt = serializers.CharField(required=False, allow_null=True, default=None,
                                          allow_blank=True, trim_whitespace=False)


class TokensSerializer(serializers.Serializer):
    total_tokens = serializers.IntegerField()


class ExportQuerySerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=["contextstore", "peteos"], required=False,
                                     default="contextstore")


class ImportQuerySerializer(serializers.Serializer):
    session_key = serializers.CharField(required=False, max_length=255)
    user_id = serializers.CharField(required=False, allow_blank=True, max_length=255)
    name = serializers.CharField(required=False, max_length=200)


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
    error = serializers.CharField(required=False, allow_blank=True, default="")


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
    data = JSON_ANY(allow_null=True)

    class Meta:
        model = Memory
        fields = ["id", "user_id", "key", "content", "data", "source_event", "created_at",
                  "updated_at"]
        read_only_fields = fields


class MemoryInSerializer(serializers.Serializer):
    user_id = serializers.CharField(max_length=255, required=False, allow_blank=True, default="",
                                    trim_whitespace=False)
    key = serializers.CharField(max_length=200, required=False, allow_null=True, default=None,
                                trim_whitespace=False)
    content = serializers.CharField(trim_whitespace=False)
    data = JSON_ANY(required=False, allow_null=True, default=None)


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


class SummarizerSerializer(serializers.Serializer):
    summarizer = JSON_ANY(allow_null=True)
