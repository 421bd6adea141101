"""The audit trails: changes and reads."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from contextstore.fields import (
    OrderedJSONField,
    RedactedCharField,
)
from contextstore.models.workspaces import ApiToken, Workspace


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
        when = f" at {self.created_at:%Y-%m-%d %H:%M:%S %Z}" if self.created_at else ""
        return f"{self.action} on {self.target_type} {self.target_id} by {self.actor_label}{when}"


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
