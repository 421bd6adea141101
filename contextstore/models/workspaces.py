"""Workspaces, their members and API tokens; the settings every level shares."""

from django.conf import settings
from django.db import models

from contextstore.fields import (
    RedactedCharField,
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
