import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from contextstore.fields import OrderedJSONField

MODEL_VISIBLE_TYPES = (
    "Task", "Message", "Reasoning", "Error", "Feedback", "LLMOutput", "PythonOutput",
    "Summary", "Notification", "ToolCall", "ToolResult", "Input", "StepResult",
)
RUNTIME_TYPES = ("BeforeAgentCall", "AfterAgentCall", "LLMCallStart", "LLMCallEnd", "LLMComplete")
EVENT_TYPES = MODEL_VISIBLE_TYPES + RUNTIME_TYPES


class Workspace(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    class Role(models.TextChoices):
        VIEWER = "viewer"
        EDITOR = "editor"
        ADMIN = "admin"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
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

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
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
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def can_write(self) -> bool:
        return self.scope == self.Scope.WRITE


class Session(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="sessions")
    key = models.CharField(max_length=255)
    user_id = models.CharField(max_length=255, blank=True, default="")
    agent = models.CharField(max_length=200, blank=True, default="")
    title = models.CharField(max_length=500, blank=True, default="")
    metadata = OrderedJSONField(default=dict)
    archived = models.BooleanField(default=False)
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
            models.UniqueConstraint(fields=["workspace", "user_id", "key"], name="session_unique_key")
        ]
        indexes = [models.Index(fields=["workspace", "-last_activity_at", "-id"], name="session_activity")]

    def __str__(self) -> str:
        return self.title or self.key


class Thread(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="threads")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="threads")
    name = models.CharField(max_length=200, default="main")
    # The agent's durable state (clientai AgentContext fields, AgentScope sub-state in `state`).
    state = OrderedJSONField(default=dict)
    memory = OrderedJSONField(default=list)
    last_results = OrderedJSONField(default=dict)
    conversation_history = OrderedJSONField(default=list)
    current_input = OrderedJSONField(null=True, blank=True)
    original_input = OrderedJSONField(null=True, blank=True)
    iteration = models.IntegerField(default=0)
    max_history_size = models.PositiveIntegerField(default=10)
    summary = models.TextField(blank=True, default="")
    revision = models.PositiveIntegerField(default=0)
    summarizer = OrderedJSONField(null=True, blank=True)
    # peteos slots and format-specific metadata kept for lossless export.
    system_prompt = models.TextField(blank=True, default="")
    tool_definitions = OrderedJSONField(null=True, blank=True)
    extra = OrderedJSONField(default=dict)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks"
    )
    fork_start_seq = models.BigIntegerField(null=True, blank=True)
    fork_end_seq = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Counters, updated in the same transaction as the events they count.
    last_seq = models.BigIntegerField(default=0)
    event_count = models.PositiveBigIntegerField(default=0)
    token_total = models.PositiveBigIntegerField(default=0)
    active_event_count = models.PositiveBigIntegerField(default=0)
    active_tokens = models.PositiveBigIntegerField(default=0)
    last_event_at = models.DateTimeField(null=True, blank=True)

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

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="runs")
    run_id = models.CharField(max_length=200)
    input = OrderedJSONField(null=True, blank=True)
    step_results = OrderedJSONField(default=dict)
    iteration = models.IntegerField(default=0)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RUNNING)
    error = models.TextField(blank=True, default="")
    started_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    event_count = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=6, default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["thread", "run_id"], name="run_unique_id")]

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

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="collapses")
    start_seq = models.BigIntegerField()
    end_seq = models.BigIntegerField()
    summary_event = models.OneToOneField(
        "Event", on_delete=models.PROTECT, related_name="summary_of"
    )
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.AGENT)
    actor = models.CharField(max_length=200, blank=True, default="")
    event_count = models.PositiveIntegerField(default=0)
    tokens_before = models.PositiveBigIntegerField(default=0)
    tokens_after = models.PositiveBigIntegerField(default=0)
    provenance = OrderedJSONField(default=dict)
    job = models.OneToOneField(
        "Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="collapse"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["thread", "start_seq"], name="collapse_range")]

    def __str__(self) -> str:
        return f"collapse {self.start_seq}–{self.end_seq} of {self.thread_id}"

    @property
    def is_active(self) -> bool:
        return self.undone_at is None


class Event(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        COLLAPSED = "collapsed"
        CLEARED = "cleared"
        REVERTED = "reverted"  # a Summary whose collapse was undone
        # Retired by a framework sync (services/sync.py); kept as history, never in context.
        REPLACED = "replaced"  # an older version of an item the framework rewrote in place
        REMOVED = "removed"  # an item the framework dropped from its transcript

    # No index of its own: the unique (thread, seq) index serves every lookup by thread.
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="events", db_index=False)
    seq = models.BigIntegerField()
    # Where the event stands in the working context: its seq, or for a Summary the first seq
    # it replaces, so a summary sits where its range stood.
    position = models.BigIntegerField()
    type = models.CharField(max_length=32)
    role = models.CharField(max_length=32, blank=True, default="")
    content = models.TextField(blank=True, default="")
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
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    collapse = models.ForeignKey(
        Collapse, null=True, blank=True, on_delete=models.SET_NULL, related_name="members",
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
            models.Index(fields=["run", "seq"], name="event_run"),
            # The working context read backward from the newest position.
            models.Index(
                fields=["thread", "position"], condition=Q(status="active", visible=True),
                name="event_working_context",
            ),
            models.Index(fields=["collapse"], name="event_collapse"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.type}"

    @property
    def is_error(self) -> bool:
        return self.type == "Error"


class ContextBlock(models.Model):
    class Placement(models.TextChoices):
        PREFIX = "prefix"
        SUFFIX = "suffix"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="blocks")
    name = models.CharField(max_length=200)
    value = models.TextField(null=True, blank=True)  # noqa: DJ001 - NULL suppresses the block (Nooa); "" is a value
    expr = models.TextField(null=True, blank=True)  # noqa: DJ001 - NULL means a fixed value
    placement = models.CharField(max_length=6, choices=Placement.choices, default=Placement.SUFFIX)
    order = models.IntegerField(default=0)
    version = models.PositiveIntegerField(default=1)
    token_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["placement", "order", "name"]
        constraints = [models.UniqueConstraint(fields=["thread", "name"], name="block_unique_name")]

    def __str__(self) -> str:
        return self.name

    @property
    def is_suppressed(self) -> bool:
        return self.value is None and self.expr is None


class SyncUpload(models.Model):
    """One framework save sent in several parts (services/sync.py).

    Parts before the last are staged here and touch nothing; the last part applies them all
    in one transaction and keeps the answer, so a replayed save gets the same answer back.
    """

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="sync_uploads")
    upload_id = models.CharField(max_length=64)
    parts = OrderedJSONField(default=dict)
    result = OrderedJSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread", "upload_id"], name="sync_upload_unique")
        ]

    def __str__(self) -> str:
        return f"sync {self.upload_id} of {self.thread_id}"


class StateRevision(models.Model):
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="state_revisions")
    revision = models.PositiveIntegerField()
    state = OrderedJSONField(default=dict)
    memory = OrderedJSONField(default=list)
    reason = models.CharField(max_length=500, blank=True, default="")
    actor = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["revision"]
        constraints = [
            models.UniqueConstraint(fields=["thread", "revision"], name="state_revision_unique")
        ]

    def __str__(self) -> str:
        return f"r{self.revision}"


class ProviderState(models.Model):
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="provider_states")
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
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memories")
    user_id = models.CharField(max_length=255, blank=True, default="")
    key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 - NULL (no key) is outside the unique index
    content = models.TextField()
    data = OrderedJSONField(null=True, blank=True)
    source_event = models.ForeignKey(
        Event, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
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

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="jobs")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    params = OrderedJSONField(default=dict)
    result = OrderedJSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    # Set while a job is pending so a thread has at most one pending job of a kind.
    pending_key = models.CharField(max_length=100, null=True, blank=True, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "finished_at"], name="job_status")]

    def __str__(self) -> str:
        return f"{self.kind} job {self.id} ({self.status})"


class AuditLog(models.Model):
    class ActorType(models.TextChoices):
        USER = "user"
        TOKEN = "token"
        WORKER = "worker"
        SYSTEM = "system"

    workspace = models.ForeignKey(
        Workspace, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_logs"
    )
    actor_type = models.CharField(max_length=8, choices=ActorType.choices)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=200, blank=True, default="")
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64)
    target_id = models.CharField(max_length=64)
    details = OrderedJSONField(default=dict)
    ip = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["workspace", "-created_at"], name="audit_workspace"),
            models.Index(fields=["target_type", "target_id"], name="audit_target"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_label} {self.action} {self.target_type}:{self.target_id}"
