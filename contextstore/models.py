import copy
import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from contextstore.documents import DOCUMENT_DEFAULTS, new_document
from contextstore.fields import (
    AgentTextField,
    OrderedJSONField,
    RedactedCharField,
    RedactedJSONTextField,
    RedactedPatchField,
    RedactedTextField,
)


class ModelSettings(models.Model):
    """Which model a thread talks to; blank/NULL means "inherit" (thread → session → workspace)."""

    model = models.CharField(max_length=200, blank=True, default="")
    context_window = models.PositiveIntegerField(null=True, blank=True)
    reserve_output = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        abstract = True


class Retention(models.Model):
    """How long history is kept (services/retention.py); NULL means "no rule here": a session's
    own setting overrides its workspace's, and neither means keep forever."""

    # Delete events written more than this many days ago.
    retention_event_days = models.PositiveIntegerField(null=True, blank=True)
    # Delete whole sessions without activity for this many days.
    retention_session_days = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        abstract = True


def redaction_default() -> dict:
    return {"enabled": True, "extra_patterns": []}


class Workspace(ModelSettings, Retention):
    slug = models.SlugField(max_length=64, unique=True)
    name = RedactedCharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    # Secrets redacted from agent text before it is stored (contextstore/redaction.py):
    # {"enabled": bool, "extra_patterns": [{"name": ..., "pattern": ...}]}, checked on save.
    redaction = models.JSONField(default=redaction_default, blank=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    class Role(models.TextChoices):
        VIEWER = "viewer"
        EDITOR = "editor"
        ADMIN = "admin"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships",
                                  db_index=False)  # membership_unique leads with it
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "user"], name="membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"

    @property
    def can_edit(self) -> bool:
        return self.role in (self.Role.EDITOR, self.Role.ADMIN)


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        READ = "read"
        WRITE = "write"
        # write, and workspace-wide operations: erasure of a person (services/erasure.py),
        # the workspace's own settings (its retention policy) and legal holds
        ADMIN = "admin"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="api_tokens")
    name = RedactedCharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, db_index=True)
    token_hash = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=5, choices=Scope.choices, default=Scope.WRITE)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'token'}, {self.scope})"

    @property
    def can_write(self) -> bool:
        return self.scope in (self.Scope.WRITE, self.Scope.ADMIN)

    @property
    def can_admin(self) -> bool:
        return self.scope == self.Scope.ADMIN


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


class Event(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        COLLAPSED = "collapsed"
        CLEARED = "cleared"
        REVERTED = "reverted"  # a Summary whose collapse was undone
        RETRACTED = "retracted"  # taken back by the agent (a popped item); kept for audit
        # Retired by a framework sync (services/sync.py); kept as history, never in context.
        REPLACED = "replaced"  # an older version of an item the framework rewrote in place
        REMOVED = "removed"  # an item the framework dropped from its transcript

    # No index of its own: the unique (thread, seq) index serves every lookup by thread.
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="events", db_index=False)
    seq = models.BigIntegerField()
    # Where the event stands in the working context: its seq, or for a Summary the first seq
    # it replaces, so a summary sits where its range stood.
    position = models.BigIntegerField()
    type = models.CharField(max_length=64)  # open: any printable name (eventspec)
    role = models.CharField(max_length=32, blank=True, default="")
    content = AgentTextField(blank=True, default="")
    parts = OrderedJSONField(null=True, blank=True)
    data = OrderedJSONField(null=True, blank=True)
    # (run, seq) and (collapse) below are the only indexes these need; no automatic FK index.
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL,
                            related_name="events", db_index=False)
    call_id = models.CharField(max_length=200, blank=True, default="")
    step = models.CharField(max_length=200, blank=True, default="")
    anchor = models.CharField(max_length=200, blank=True, default="")
    client_id = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 - NULL (no key) is outside the unique index
    payload_hash = models.CharField(max_length=64, blank=True, default="")
    # A framework's own id for the item this event stores ("<namespace>:<key>"), set by sync;
    # unique among the thread's current versions, so a rewrite retires the old one first.
    item_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 - NULL (no key) is outside the unique index
    replaced_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False,
    )
    token_count = models.PositiveIntegerField(default=0)
    thinking_tokens = models.PositiveIntegerField(default=0)
    visible = models.BooleanField(default=True)
    # An Error event or a failed tool result: toolcalls.event_failed, decided once at write time.
    is_error = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    collapse = models.ForeignKey(
        Collapse, null=True, blank=True, on_delete=models.SET_NULL, related_name="members",
        db_index=False,
    )
    cleared_by = models.ForeignKey(
        Clear, null=True, blank=True, on_delete=models.SET_NULL, related_name="members",
        db_index=False,
    )
    occurred_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread", "seq"], name="event_unique_seq"),
            models.UniqueConstraint(
                fields=["thread", "client_id"], condition=Q(client_id__isnull=False),
                name="event_unique_client_id",
            ),
            models.UniqueConstraint(
                fields=["thread", "item_key"],
                condition=Q(item_key__isnull=False) & ~Q(status__in=["replaced", "removed"]),
                name="event_unique_item_key",
            ),
        ]
        indexes = [
            models.Index(fields=["thread", "type", "seq"], name="event_type"),
            # Most events belong to no run and no collapse: rows without one stay out of these
            # two (every insert paid for their NULL entries; `= x` implies IS NOT NULL).
            models.Index(fields=["run", "seq"], name="event_run", condition=Q(run__isnull=False)),
            # The working context read backward from the newest position.
            models.Index(
                fields=["thread", "position"], condition=Q(status="active", visible=True),
                name="event_working_context",
            ),
            # Previous/next error: the few error rows of a thread, by seq.
            models.Index(fields=["thread", "seq"], name="event_error", condition=Q(is_error=True)),
            models.Index(fields=["collapse"], name="event_collapse",
                         condition=Q(collapse__isnull=False)),
            models.Index(fields=["cleared_by"], name="event_cleared_by",
                         condition=Q(cleared_by__isnull=False)),
            # Deleting an event looks up the rows that point at it (the FK check on both
            # databases): without this, deleting a thread's n events scanned the table n times.
            models.Index(fields=["replaced_by"], name="event_replaced_by",
                         condition=Q(replaced_by__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.type}"


class EventSearch(models.Model):
    """An event's searchable text (content, parts and data, upper-cased) under a trigram index,
    on PostgreSQL; filled off the insert path from EventSearchPending by services/search.py, so
    an insert maintains no trigram index (docs/architecture.md, "Text search"). Empty on
    SQLite, which searches the event columns themselves."""

    # Deleting events deletes these in the database: on PostgreSQL the constraint is ON DELETE
    # CASCADE (migration 0025; Django's DB_CASCADE cannot follow Event's Python CASCADE), so no
    # delete of events, the ORM's or raw SQL, pays a query for them or leaves text behind.
    event = models.OneToOneField(Event, primary_key=True, on_delete=models.DO_NOTHING,
                                 db_constraint=False, related_name="+")
    thread_id = models.BigIntegerField()  # a thread's search narrows the index's matches
    text = models.TextField()

    def __str__(self) -> str:
        return f"text of event {self.pk}"


class EventSearchPending(models.Model):
    """Ids of events inserted (or whose text changed) and not indexed yet: one row per INSERT
    statement, written by a PostgreSQL trigger in the same transaction as the events, so no
    committed event is ever left out. Searches read these events directly."""

    low = models.BigIntegerField()
    high = models.BigIntegerField()

    def __str__(self) -> str:
        return f"events {self.low}-{self.high}"


class ContextBlock(models.Model):
    class Placement(models.TextChoices):
        PREFIX = "prefix"
        SUFFIX = "suffix"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="blocks",
                               db_index=False)  # block_unique_name leads with it
    name = models.CharField(max_length=200)
    value = AgentTextField(null=True, blank=True)  # NULL suppresses the block (Nooa); "" is a value
    expr = AgentTextField(null=True, blank=True)  # NULL means a fixed value
    placement = models.CharField(max_length=6, choices=Placement.choices, default=Placement.SUFFIX)
    order = models.IntegerField(default=0)
    version = models.PositiveIntegerField(default=1)
    token_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["placement", "order", "name"]
        constraints = [models.UniqueConstraint(fields=["thread", "name"], name="block_unique_name")]

    # Not stored: set by the dashboard's side panel on the blocks it shows.
    kept_versions: list["ContextBlockVersion"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_suppressed(self) -> bool:
        return self.value is None and self.expr is None


class ContextBlockVersion(models.Model):
    """Every version a block has had, the current one included; a deletion is a version too.

    Versions outlive the block row, so a deleted block can be restored and a render record can
    name exactly the block text a past call saw.
    """

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="block_versions",
                               db_index=False)  # block_version_unique leads with it
    name = models.CharField(max_length=200)
    version = models.PositiveIntegerField()
    value = AgentTextField(null=True, blank=True)  # as ContextBlock.value
    expr = AgentTextField(null=True, blank=True)  # as ContextBlock.expr
    placement = models.CharField(max_length=6, choices=ContextBlock.Placement.choices,
                                 default=ContextBlock.Placement.SUFFIX)
    order = models.IntegerField(default=0)
    token_count = models.PositiveIntegerField(default=0)
    deleted = models.BooleanField(default=False)
    actor = RedactedCharField(max_length=200, blank=True, default="")
    reason = RedactedCharField(max_length=32, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "version"]
        constraints = [models.UniqueConstraint(fields=["thread", "name", "version"],
                                               name="block_version_unique")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def is_suppressed(self) -> bool:
        return self.value is None and self.expr is None


class StateRevision(models.Model):
    """One revision of a thread's document: enough, with its snapshot, to rebuild all of it."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="state_revisions",
                               db_index=False)  # state_revision_unique leads with it
    revision = models.PositiveIntegerField()
    # The whole document as JSON text (a snapshot: every SNAPSHOT_EVERY revisions, or when the
    # patches since the last one outgrow the document), else NULL.
    document = RedactedJSONTextField(null=True, blank=True)  # noqa: DJ001 - NULL: not a snapshot
    # RFC 6902 operations (JSON text) from the previous revision; NULL for a snapshot that was
    # not written after one (the first revision, and revisions carried over by the migration).
    patch = RedactedPatchField(null=True, blank=True)  # noqa: DJ001 - NULL: no previous revision
    base = models.PositiveIntegerField(default=0)  # the snapshot this revision is rebuilt from
    chain_bytes = models.PositiveBigIntegerField(default=0)  # patch bytes since that snapshot
    size = models.PositiveBigIntegerField(default=0)  # bytes this revision stores
    reason = RedactedCharField(max_length=500, blank=True, default="")
    actor = RedactedCharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["revision"]
        constraints = [
            models.UniqueConstraint(fields=["thread", "revision"], name="state_revision_unique")
        ]

    def __str__(self) -> str:
        return f"r{self.revision}"


class ProviderState(models.Model):
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="provider_states",
                               db_index=False)  # provider_state_unique leads with it
    provider = models.CharField(max_length=200)
    state = OrderedJSONField(null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread", "provider"], name="provider_state_unique")
        ]

    def __str__(self) -> str:
        return self.provider


class Memory(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memories",
                                  db_index=False)  # memory_unique_key leads with it
    user_id = models.CharField(max_length=255, blank=True, default="")
    key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 - NULL (no key) is outside the unique index
    content = AgentTextField()
    data = OrderedJSONField(null=True, blank=True)
    source_event = models.ForeignKey(
        Event, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Its source event was deleted by retention (the memory itself is kept).
    source_expired = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "user_id", "key"], condition=Q(key__isnull=False),
                name="memory_unique_key",
            )
        ]
        indexes = [models.Index(fields=["workspace", "user_id", "-updated_at"], name="memory_user")]

    def __str__(self) -> str:
        return self.key or self.content[:40]


class Job(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    class Kind(models.TextChoices):
        RANGE = "range"
        TOKEN_BUDGET = "token_budget"
        PER_RUN = "per_run"
        # Long dashboard operations (services/operations.py), run in batches by the worker.
        CLEAR = "clear"
        UNCLEAR = "unclear"
        COLLAPSE = "collapse"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="jobs")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    params = OrderedJSONField(default=dict)
    result = OrderedJSONField(null=True, blank=True)
    error = AgentTextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    # Set while a job is pending so a thread has at most one pending job of a kind.
    pending_key = models.CharField(max_length=100, null=True, blank=True, unique=True)
    # What a running job's worker is at (stage, the range it decided, how many events), for
    # the page; None until a worker takes it.
    progress = OrderedJSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "finished_at"], name="job_status")]

    def __str__(self) -> str:
        return f"{self.kind} job {self.id} ({self.status})"

    def pending_seconds(self, now) -> int | None:
        """Seconds this job has been queued (since created) or running (since taken); None when
        it is finished."""
        if self.status == self.Status.QUEUED:
            return int((now - self.created_at).total_seconds())
        if self.status == self.Status.RUNNING and self.started_at:
            return int((now - self.started_at).total_seconds())
        return None

    def is_timed_out(self, now) -> bool:
        """Queued or running for longer than SUMMARIZER_JOB_TIMEOUT: the page says so and
        offers Cancel and Retry (a worker may still finish it until it is cancelled)."""
        seconds = self.pending_seconds(now)
        return seconds is not None and seconds > settings.SUMMARIZER_JOB_TIMEOUT


class AuditLog(models.Model):
    class ActorType(models.TextChoices):
        USER = "user"
        TOKEN = "token"
        WORKER = "worker"
        SYSTEM = "system"
        SHARE = "share", "share link"  # someone holding a share link (services/sharing.py)

    # No index of its own: audit_workspace (workspace, created_at) leads with it, and every
    # index of this table is written by every audited change.
    workspace = models.ForeignKey(
        Workspace, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_logs",
        db_index=False,
    )
    actor_type = models.CharField(max_length=8, choices=ActorType.choices)
    # Indexed by the partial indexes below: a row has a user or a token or neither, never both.
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        db_index=False,
    )
    actor_token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False,
    )
    actor_label = RedactedCharField(max_length=200, blank=True, default="")
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64)
    target_id = models.CharField(max_length=64)
    details = OrderedJSONField(default=dict)
    ip = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # The thread a change of its history or state was made to (the thread page's activity log,
    # selectors/activity.py); set by services.common.audit_row, whatever the row's target.
    thread_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["workspace", "-created_at"], name="audit_workspace"),
            models.Index(fields=["target_type", "target_id"], name="audit_target"),
            models.Index(fields=["thread_id", "-id"], name="audit_thread",
                         condition=Q(thread_id__isnull=False)),
            # Only the rows that have one: deleting a user or a token finds its rows (a lookup
            # by `actor_user_id = x` implies NOT NULL), and a token's rows put no NULL in the
            # user's index, nor a user's in the token's.
            models.Index(fields=["actor_user"], name="audit_actor_user",
                         condition=Q(actor_user__isnull=False)),
            models.Index(fields=["actor_token"], name="audit_actor_token",
                         condition=Q(actor_token__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.actor_label} {self.action} {self.target_type}:{self.target_id}"


class ReadAudit(models.Model):
    """Who read what (services/access_log.py): at most one row per actor, action, object and
    hour, whatever the number of reads. Apart from AuditLog, which records changes one row
    each: reads are far more frequent, and the hour's unique key lets a read insert its row
    with ON CONFLICT DO NOTHING, one statement and no read first.

    `session_id` names the session the object belongs to (the session page's "Viewed by"); it
    is no foreign key, so the record of who looked outlives the session, as the audit log does.
    """

    class Action(models.TextChoices):
        SESSION_VIEW = "session.view", "session page"
        THREAD_VIEW = "thread.view", "thread page"
        CONTEXT_VIEW = "context.view", "what the model sees"
        CALL_SENT = "call.sent", "an LLM call as sent"
        RENDER_READ = "render.read", "a render record"
        EXPORT = "export", "export"
        EVENTS_READ = "events.read", "events (API)"
        CONTEXT_READ = "context.read", "context (API)"
        SHARE_VIEW = "share.view", "a share link"

    workspace = models.ForeignKey(
        Workspace, null=True, blank=True, on_delete=models.SET_NULL, related_name="read_audits",
        db_index=False,  # read_audit_workspace leads with it
    )
    session_id = models.BigIntegerField(null=True, blank=True)
    # Who, as one non-null value the unique key can hold: user:<id>, token:<id>, <type>:<label>.
    actor_key = models.CharField(max_length=220)
    actor_type = models.CharField(max_length=8, choices=AuditLog.ActorType.choices)
    # Indexed by the partial indexes below: a row has a user or a token or neither, never both.
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        db_index=False,
    )
    actor_token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False,
    )
    actor_label = RedactedCharField(max_length=200, blank=True, default="")
    action = models.CharField(max_length=32, choices=Action.choices)
    target_type = models.CharField(max_length=64)
    target_id = models.CharField(max_length=64)
    hour = models.DateTimeField(help_text="The hour of the reads (UTC, truncated).")
    first_at = models.DateTimeField(help_text="The first read in that hour.")
    ip = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        ordering = ["-hour", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["actor_key", "action", "target_type", "target_id", "hour"],
                                    name="read_audit_once_an_hour"),
        ]
        indexes = [
            models.Index(fields=["session_id", "-hour"], name="read_audit_session"),
            models.Index(fields=["workspace", "-hour"], name="read_audit_workspace"),
            models.Index(fields=["target_type", "target_id"], name="read_audit_target"),
            # As AuditLog's: only the rows that have one.
            models.Index(fields=["actor_user"], name="read_audit_actor_user",
                         condition=Q(actor_user__isnull=False)),
            models.Index(fields=["actor_token"], name="read_audit_actor_token",
                         condition=Q(actor_token__isnull=False)),
        ]

    def __str__(self) -> str:
        return (f"{self.actor_label} {self.action} {self.target_type}:{self.target_id} "
                f"{self.hour:%Y-%m-%d %H}h")


class StoredText(models.Model):
    """Text kept once per distinct content (sha256) within one workspace, for render records and
    logged prompts: a summary, an evaluated block expression, one message an agent sent.

    A text is resolved only within the workspace that stored it: a hash names nothing outside
    it, so naming another workspace's hash reads nothing, and erasing a person's texts looks at
    their own workspace alone."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # stored_text_key leads with it
    sha256 = models.CharField(max_length=64)
    text = AgentTextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "sha256"], name="stored_text_key")]

    def __str__(self) -> str:
        return self.sha256[:12]


class RenderRecord(models.Model):
    """What one render gave a model, as references: rebuilds the same messages byte for byte.

    `spec` holds event ids and positions, block version ids, text hashes, budget, format and
    options; it never copies event text, which stays in the (immutable) event rows.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="renders")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="renders",
                               db_index=False)  # render_thread_time leads with it
    format = models.CharField(max_length=10, default="raw")
    max_tokens = models.PositiveIntegerField()
    total_tokens = models.PositiveIntegerField(default=0)
    prefix_hash = models.CharField(max_length=64)
    thread_revision = models.PositiveIntegerField(default=0)
    spec = OrderedJSONField(default=dict)
    actor = RedactedCharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["thread", "created_at"], name="render_thread_time")]

    def __str__(self) -> str:
        return str(self.id)


class CallReplay(models.Model):
    """A recorded LLM call sent again to the playground endpoint (services/replays.py): as it
    was or with messages edited. The request body is kept once in StoredText (`request_hash`);
    a failed replay keeps its error and no answer. A replay is a worker's job: `queued` when
    asked, `running` while a worker sends it, then `ok` or `error`."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        OK = "ok"
        ERROR = "error"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="replays",
                               db_index=False)  # replay_call leads with it
    call_seq = models.PositiveBigIntegerField(help_text="The seq naming the call (its LLMCallStart's).")
    model = models.CharField(max_length=200)
    edited = OrderedJSONField(default=list, help_text="Indexes of the messages changed before sending.")
    request_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=8, choices=Status.choices)
    answer = AgentTextField(blank=True, default="")
    tool_calls = OrderedJSONField(default=list)
    finish_reason = RedactedCharField(max_length=40, blank=True, default="")
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    error = RedactedCharField(max_length=500, blank=True, default="")
    actor = RedactedCharField(max_length=200, blank=True, default="")
    # Who asked (their pending replays are capped: PLAYGROUND_MAX_PER_USER).
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, related_name="+",
                             on_delete=models.SET_NULL, db_index=False)  # replay_user leads with it
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["thread", "call_seq"], name="replay_call"),
                   # the caps count a person's pending replays; a user's deletion finds theirs
                   models.Index(fields=["user", "status"], name="replay_user")]

    def __str__(self) -> str:
        return f"replay of #{self.call_seq} ({self.status})"


class ScopedState(models.Model):
    """State shared across sessions: app scope (workspace + app) or user scope (+ user_id).

    ADK's `app:` and `user:` state prefixes. The revision is bumped on every write.
    """

    class Scope(models.TextChoices):
        APP = "app"
        USER = "user"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="scoped_states",
                                  db_index=False)  # scoped_state_unique leads with it
    app = models.CharField(max_length=200)
    scope = models.CharField(max_length=4, choices=Scope.choices)
    user_id = models.CharField(max_length=255, blank=True, default="")
    state = OrderedJSONField(default=dict)
    revision = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "app", "scope", "user_id"],
                                    name="scoped_state_unique")
        ]

    def __str__(self) -> str:
        return f"{self.app}:{self.scope}:{self.user_id}" if self.user_id else f"{self.app}:{self.scope}"


class ScopedStateRevision(models.Model):
    scoped_state = models.ForeignKey(ScopedState, on_delete=models.CASCADE, related_name="revisions",
                                     db_index=False)  # scoped_state_revision_unique leads with it
    revision = models.PositiveIntegerField()
    state = OrderedJSONField(default=dict)
    actor = RedactedCharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["revision"]
        constraints = [
            models.UniqueConstraint(fields=["scoped_state", "revision"], name="scoped_state_revision_unique")
        ]

    def __str__(self) -> str:
        return f"r{self.revision}"


class ThreadBlob(models.Model):
    """Binary values kept beside a thread (LangGraph checkpoints and channel values), by key.

    Last write wins per key; `meta` is readable JSON describing the bytes.
    """

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="blobs",
                               db_index=False)  # thread_blob_unique leads with it
    key = models.CharField(max_length=500)
    content_type = RedactedCharField(max_length=100, blank=True, default="")
    data = models.BinaryField()
    meta = OrderedJSONField(null=True, blank=True)
    size = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["thread", "key"], name="thread_blob_unique")]

    def __str__(self) -> str:
        return self.key


class CommitRecord(models.Model):
    """The replay store of framework saves (services/commits.py): the answer to a save, kept by
    batch id so a replay returns it unchanged; before a save sent in several parts is applied,
    its earlier parts, staged (`parts`, no response yet)."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="commit_records",
                               db_index=False)  # commit_record_unique leads with it
    batch_id = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    response = OrderedJSONField(null=True, blank=True)  # None: parts staged, not applied yet
    parts = OrderedJSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["thread", "batch_id"], name="commit_record_unique")]

    def __str__(self) -> str:
        return self.batch_id


class OtelSpan(models.Model):
    """One OpenTelemetry span as an exporter sent it (OTLP/HTTP), kept raw: the events of its
    trace are derived from these rows (services/otlp), again whenever the mapping improves
    (`manage.py otel_remap`). A re-sent span is the same row (workspace, trace id, span id)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # otel_span_unique leads with it
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True, default="")
    name = AgentTextField()  # exporters' text, NUL included (as every text an agent sends)
    kind = models.PositiveSmallIntegerField(default=0)
    start_ns = models.BigIntegerField(default=0)
    end_ns = models.BigIntegerField(default=0)
    status_code = models.PositiveSmallIntegerField(default=0)
    status_message = AgentTextField(blank=True, default="")
    attributes = OrderedJSONField(default=dict)
    events = OrderedJSONField(default=list)
    links = OrderedJSONField(default=list)
    resource = OrderedJSONField(default=dict)
    scope = OrderedJSONField(default=dict)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "trace_id", "span_id"],
                                               name="otel_span_unique")]

    def __str__(self) -> str:
        return f"{self.name} {self.trace_id}/{self.span_id}"


class OtelLog(models.Model):
    """A log record naming a span (GenAI content sent as log events), kept raw like the span;
    the same record re-sent is the same row (its digest)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # otel_log_unique leads with it
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    digest = models.CharField(max_length=64)
    time_ns = models.BigIntegerField(default=0)
    event_name = AgentTextField(blank=True, default="")
    body = OrderedJSONField(null=True, blank=True)
    attributes = OrderedJSONField(default=dict)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "trace_id", "span_id", "digest"],
                                               name="otel_log_unique")]

    def __str__(self) -> str:
        return f"{self.event_name} {self.trace_id}/{self.span_id}"


class OtelPending(models.Model):
    """The derivation outbox: a trace an export brought spans or log records to that are not
    derived yet. Written in the export's own transaction, one row per export and trace (never
    updated by an export, so no export waits on a derivation's locks), and deleted by the pass
    that derived them; a pass that fails leaves it, due again later."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    trace_id = models.CharField(max_length=32)
    token = models.ForeignKey(ApiToken, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    due_at = models.DateTimeField()
    attempts = models.PositiveSmallIntegerField(default=0)

    def __str__(self) -> str:
        return self.trace_id


class OtelTrace(models.Model):
    """Where a trace's events went: the session its resolved id names (the trace id until a
    span naming a session arrives; then its events move) and the thread holding them."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # otel_trace_unique leads with it
    trace_id = models.CharField(max_length=32)
    session_key = models.CharField(max_length=255, blank=True, default="")
    thread = models.ForeignKey(Thread, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    mapped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "trace_id"], name="otel_trace_unique")]

    def __str__(self) -> str:
        return self.trace_id


class Comment(models.Model):
    """A person's note on a session, or on one event of its threads (an LLM call is named by
    its call's seq). Written only by services/comments.py; the text is the person's, shown
    escaped (Markdown through contextstore/markdown.py, which escapes first)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="comments",
                                db_index=False)  # comment_session leads with it
    # Both set: on the event at `seq` of `thread`; both NULL: on the session.
    thread = models.ForeignKey(Thread, null=True, blank=True, on_delete=models.CASCADE, related_name="+",
                               db_index=False)  # comment_event leads with it
    seq = models.BigIntegerField(null=True, blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                               on_delete=models.SET_NULL, related_name="+")
    author_label = RedactedCharField(max_length=200, blank=True, default="")
    text = RedactedTextField()
    created_at = models.DateTimeField(auto_now_add=True)
    edited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["session", "created_at"], name="comment_session"),
            models.Index(fields=["thread", "seq"], name="comment_event"),
        ]

    def __str__(self) -> str:
        return f"comment {self.pk} on {f'#{self.seq}' if self.seq else f'session {self.session_id}'}"


class Score(models.Model):
    """An evaluation of a session or of one LLM call (thread + the call's seq), as Langfuse
    keeps them: a name, a value of one data type, an optional comment, and who gave it (a
    person or an API token: evaluators post scores through the API). services/scores.py."""

    class DataType(models.TextChoices):
        NUMERIC = "numeric"
        CATEGORICAL = "categorical"
        BOOLEAN = "boolean"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # score_name leads with it
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="scores",
                                db_index=False)  # score_session leads with it
    thread = models.ForeignKey(Thread, null=True, blank=True, on_delete=models.CASCADE, related_name="+",
                               db_index=False)  # score_event leads with it
    seq = models.BigIntegerField(null=True, blank=True)
    name = RedactedCharField(max_length=100)
    data_type = models.CharField(max_length=11, choices=DataType.choices)
    # numeric: the number; boolean: 1 or 0; categorical: NULL.
    value = models.FloatField(null=True, blank=True)
    # categorical: the category; boolean: "true" or "false"; numeric: "".
    string_value = RedactedCharField(max_length=200, blank=True, default="")
    comment = RedactedTextField(blank=True, default="")
    author_user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    author_token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    author_label = RedactedCharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["session", "created_at"], name="score_session"),
            models.Index(fields=["thread", "seq"], name="score_event"),
            models.Index(fields=["workspace", "name", "session"], name="score_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name}={self.display}"

    @property
    def display(self) -> str:
        if self.data_type == self.DataType.NUMERIC:
            return f"{self.value:g}"
        return self.string_value
class ShareLink(models.Model):
    """A read-only link to a session, an event or an LLM call (services/sharing.py): whoever
    holds the token sees that target, without logging in, until it expires or is revoked.
    Only the token's sha256 is kept; the link is shown once, when it is made."""

    class Kind(models.TextChoices):
        SESSION = "session"
        EVENT = "event"
        CALL = "call", "LLM call"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="share_links",
                                  db_index=False)  # share_link_token leads with it
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="share_links",
                                db_index=False)  # share_link_session leads with it
    thread = models.ForeignKey(Thread, null=True, blank=True, on_delete=models.CASCADE,
                               related_name="share_links")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    seq = models.BigIntegerField(null=True, blank=True)
    prefix = models.CharField(max_length=16)
    token_hash = models.CharField(max_length=64)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "token_hash"],
                                               name="share_link_token")]
        indexes = [models.Index(fields=["token_hash"], name="share_link_lookup"),
                   models.Index(fields=["session", "-created_at"], name="share_link_session")]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.kind}, until {self.expires_at:%Y-%m-%d %H:%M})"

    def is_live(self, now) -> bool:
        return self.revoked_at is None and self.expires_at > now


class Dataset(models.Model):
    """A named collection of examples (calls, ranges of events) of a workspace, exported as
    JSONL (services/datasets.py)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="datasets",
                                  db_index=False)  # dataset_unique_name leads with it
    name = RedactedCharField(max_length=200)
    item_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="dataset_unique_name")]

    def __str__(self) -> str:
        return self.name


class DatasetItem(models.Model):
    """One example: what went in (a call's messages as rendered, or a range's events) and what
    came out. A copy: it stays when the session is deleted by retention (its source ids go
    NULL), and goes when the person it came from is erased (services/erasure.py)."""

    class Kind(models.TextChoices):
        CALL = "call", "LLM call"
        RANGE = "range", "range of events"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # dataset_item_user leads with it
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="items",
                                db_index=False)  # dataset_item_order leads with it
    kind = models.CharField(max_length=8, choices=Kind.choices)
    input = OrderedJSONField(default=list)
    output = OrderedJSONField(null=True, blank=True)
    metadata = OrderedJSONField(default=dict)
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+")
    thread = models.ForeignKey(Thread, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+")
    # The source session's end user, so erasing that person finds the copy after retention.
    user_id = models.CharField(max_length=255, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["dataset", "id"], name="dataset_item_order"),
                   models.Index(fields=["workspace", "user_id"], name="dataset_item_user")]

    def __str__(self) -> str:
        return f"{self.dataset_id}/{self.pk} ({self.kind})"


class WorkerHeartbeat(models.Model):
    """The last sign of life of each Celery worker, by its node name: written every
    WORKER_HEARTBEAT_EVERY seconds from the worker's main loop (project/celery.py); /readyz
    reads the newest one when WORKER_HEARTBEAT_MAX_AGE is set (views/health.py)."""

    hostname = models.CharField(max_length=255, primary_key=True)
    pid = models.IntegerField()
    seen_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.hostname} (pid {self.pid}) at {self.seen_at:%Y-%m-%d %H:%M:%S}"
