"""Renders, LLM-call replays and the texts they name."""

import uuid

from django.conf import settings
from django.db import models

from contextstore.fields import (
    AgentTextField,
    OrderedJSONField,
    RedactedCharField,
)
from contextstore.models.threads import Thread
from contextstore.models.workspaces import Workspace


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
