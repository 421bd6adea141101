"""Sessions, their threads and what shapes a thread's working context: runs, collapses, clears."""

import copy
from typing import Any

from django.db import models

from contextstore.documents import DOCUMENT_DEFAULTS, new_document
from contextstore.fields import (
    AgentTextField,
    OrderedJSONField,
    RedactedCharField,
)
from contextstore.models.workspaces import ModelSettings, Retention, Workspace


class Session(ModelSettings, Retention):
    # indexed by session_activity (and session_unique_key), which lead with it
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="sessions",
                                  db_index=False)
    key = models.CharField(max_length=255)
    user_id = models.CharField(max_length=255, blank=True, default="")
    # The framework application a session belongs to (ADK app_name); part of its identity.
    app = models.CharField(max_length=200, blank=True, default="")
    agent = RedactedCharField(max_length=200, blank=True, default="")
    title = RedactedCharField(max_length=500, blank=True, default="")
    metadata = OrderedJSONField(default=dict)
    archived = models.BooleanField(default=False)
    # A legal hold exempts the session from every retention rule.
    legal_hold = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    last_activity_at = models.DateTimeField(auto_now_add=True)
    # Counters kept in the same transaction as the writes, so lists never COUNT events.
    thread_count = models.PositiveIntegerField(default=0)
    event_count = models.PositiveBigIntegerField(default=0)
    error_count = models.PositiveBigIntegerField(default=0)
    token_total = models.PositiveBigIntegerField(default=0)
    cost_total = models.DecimalField(max_digits=14, decimal_places=6, default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "app", "user_id", "key"], name="session_unique_key")
        ]
        indexes = [
            models.Index(fields=["workspace", "-last_activity_at", "-id"], name="session_activity"),
            models.Index(fields=["workspace", "app", "user_id", "-last_activity_at", "-id"],
                         name="session_app_activity"),
        ]

    def __str__(self) -> str:
        return self.title or self.key


class SessionModel(models.Model):
    """A model name the session's LLM calls reported (`data.model` of an LLMCallStart or
    LLMComplete): the session list's model filter reads these rows, not the events.

    Kept by services/history.py with the other session counters: added with the events that
    name it, dropped only when the last thread that named it is deleted (retract, clear and
    collapse keep the rows, as they keep the events)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="models_used",
                                db_index=False)  # session_model_unique leads with it
    model = models.CharField(max_length=200)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "model"], name="session_model_unique")]
        indexes = [models.Index(fields=["model", "session"], name="session_model_by_name")]

    def __str__(self) -> str:
        return self.model


class InDocument:
    """One field of Thread.document, read as an attribute (thread.state, thread.summary).

    Read-only on purpose: every write goes through services/document.py, which records the
    revision; assigning raises instead of silently skipping the history.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.default = dict(DOCUMENT_DEFAULTS)[name]

    def __get__(self, obj: "Thread | None", objtype: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.document.get(self.name, self.default)
        return copy.deepcopy(value) if value is self.default else value

    def __set__(self, obj: "Thread", value: Any) -> None:
        raise AttributeError(f"Thread.{self.name} is part of the document; "
                             "write it with contextstore.services.document.")


class Thread(ModelSettings):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="threads")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="threads",
                                db_index=False)  # thread_unique_name leads with it
    name = RedactedCharField(max_length=200, default="main")
    # The agent's document (state, memory, summary, clientai fields, peteos slots, framework
    # namespaces): one JSON object with one revision, written only by services/document.py.
    document = OrderedJSONField(default=new_document)
    revision = models.PositiveIntegerField(default=0)  # the document's revision; the CAS token
    state = InDocument()
    memory = InDocument()
    summary = InDocument()
    last_results = InDocument()
    conversation_history = InDocument()
    current_input = InDocument()
    original_input = InDocument()
    iteration = InDocument()
    max_history_size = InDocument()
    system_prompt = InDocument()
    tool_definitions = InDocument()
    extra = InDocument()
    summarizer = OrderedJSONField(null=True, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks"
    )
    # The parent's working-context positions the fork copied, both ends inclusive (None = open).
    fork_start_position = models.BigIntegerField(null=True, blank=True)
    fork_end_position = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Counters, updated in the same transaction as the events they count.
    last_seq = models.BigIntegerField(default=0)
    event_count = models.PositiveBigIntegerField(default=0)
    token_total = models.PositiveBigIntegerField(default=0)
    active_event_count = models.PositiveBigIntegerField(default=0)
    active_tokens = models.PositiveBigIntegerField(default=0)
    error_count = models.PositiveBigIntegerField(default=0)  # rows with is_error, any status
    last_event_at = models.DateTimeField(null=True, blank=True)
    # Retention deleted every event up to this seq (0: none); seq is never reused after it.
    expired_seq = models.BigIntegerField(default=0)
    # Moves on every change to what a context render reads other than new events at the end of
    # the working context: events leaving or entering it (history.working_context_changed), a
    # block written or deleted. A render kept in a process is reused only while it is the same
    # (selectors/rendering.py).
    context_generation = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "name"], name="thread_unique_name")]

    def __str__(self) -> str:
        return f"{self.session.key}/{self.name}"


class Run(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        COMPLETED = "completed"
        FAILED = "failed"
        INTERRUPTED = "interrupted"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="runs",
                               db_index=False)  # run_unique_id leads with it
    run_id = models.CharField(max_length=200)
    input = OrderedJSONField(null=True, blank=True)
    step_results = OrderedJSONField(default=dict)
    iteration = models.IntegerField(default=0)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RUNNING)
    error = AgentTextField(blank=True, default="")
    started_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    event_count = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=6, default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["thread", "run_id"], name="run_unique_id")]
        # The newest runs of a thread (the thread page's run bars, the session page's run list)
        # are read in this order, a page at a time, without sorting all of the thread's runs.
        indexes = [models.Index(fields=["thread", "-started_at", "-id"], name="run_recent")]

    def __str__(self) -> str:
        return self.run_id

    @property
    def duration_ms(self) -> int | None:
        if self.ended_at is None:
            return None
        return int((self.ended_at - self.started_at).total_seconds() * 1000)


class Collapse(models.Model):
    class Source(models.TextChoices):
        PERSON = "person"
        AGENT = "agent"
        TOKEN_BUDGET = "token_budget"
        PER_RUN = "per_run"
        WORKER = "worker"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="collapses",
                               db_index=False)  # collapse_range leads with it
    # Working-context positions, both ends inclusive: the first and last position it replaced.
    start_position = models.BigIntegerField()
    end_position = models.BigIntegerField()
    summary_event = models.OneToOneField(
        "Event", on_delete=models.PROTECT, related_name="summary_of"
    )
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.AGENT)
    actor = RedactedCharField(max_length=200, blank=True, default="")
    event_count = models.PositiveIntegerField(default=0)
    tokens_before = models.PositiveBigIntegerField(default=0)
    tokens_after = models.PositiveBigIntegerField(default=0)
    provenance = OrderedJSONField(default=dict)
    job = models.OneToOneField(
        "Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="collapse"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    undone_at = models.DateTimeField(null=True, blank=True)
    # Originals deleted by retention: the summary stands for them; undo can no longer restore them.
    expired_count = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["thread", "start_position"], name="collapse_range")]

    def __str__(self) -> str:
        return f"collapse {self.start_position}–{self.end_position} of {self.thread_id}"


class Clear(models.Model):
    """One clear-context (AgentScope clearContext): which events it took out of the working
    context (they point to it) and the summary it emptied, so un-clear can bring both back."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="clears")
    actor = RedactedCharField(max_length=200, blank=True, default="")
    summary = AgentTextField(blank=True, default="")
    event_count = models.PositiveIntegerField(default=0)
    tokens = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    # Not stored: set on the clear thread_unclear returns (the events it brought back, and
    # whether the summary came back with them).
    restored: int
    summary_restored: bool

    def __str__(self) -> str:
        return f"clear {self.pk} of {self.thread_id}"
