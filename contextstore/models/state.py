"""Context blocks, the document's revisions and what frameworks keep beside it."""

from django.db import models
from django.db.models import Q

from contextstore.fields import (
    AgentTextField,
    OrderedJSONField,
    RedactedCharField,
    RedactedJSONTextField,
    RedactedPatchField,
)
from contextstore.models.events import Event
from contextstore.models.threads import Thread
from contextstore.models.workspaces import Workspace


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
    now: str | None  # an expression block's text as it renders now (the thread page sets it)
    now_tokens: int

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
