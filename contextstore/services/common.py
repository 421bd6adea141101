from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import models

from contextstore.models import ApiToken, AuditLog, Thread, Workspace

UNSET: Any = object()


@dataclass(frozen=True)
class Actor:
    """Who makes a change: a person, an API token, a worker or the system itself."""

    type: str
    label: str
    user: AbstractBaseUser | None = None
    token: ApiToken | None = None
    ip: str | None = None

    @classmethod
    def for_user(cls, user: AbstractBaseUser, ip: str | None = None) -> "Actor":
        return cls(AuditLog.ActorType.USER, user.get_username(), user=user, ip=ip)

    @classmethod
    def for_token(cls, token: ApiToken, ip: str | None = None) -> "Actor":
        return cls(AuditLog.ActorType.TOKEN, f"token:{token.prefix}", token=token, ip=ip)

    @classmethod
    def worker(cls, name: str = "worker") -> "Actor":
        return cls(AuditLog.ActorType.WORKER, name)

    @classmethod
    def system(cls, name: str = "system") -> "Actor":
        return cls(AuditLog.ActorType.SYSTEM, name)


def audit(
    *, actor: Actor, action: str, target: models.Model, workspace: Workspace | None, **details: Any
) -> AuditLog:
    return AuditLog.objects.create(
        workspace=workspace,
        actor_type=actor.type,
        actor_user=actor.user,
        actor_token=actor.token,
        actor_label=actor.label[:200],
        action=action,
        target_type=target._meta.model_name,
        target_id=str(target.pk),
        details=details,
        ip=actor.ip,
    )


# The agent's document: JSON that can be large, and that history operations never read.
THREAD_STATE_FIELDS = ("document",)


def lock_thread(thread: Thread, *, history_only: bool = False) -> Thread:
    """Re-read the thread under a row lock; every change to its history or state starts here.

    history_only skips the document, so appending costs the same however big the
    agent's state has grown.
    """
    qs = Thread.objects.select_for_update(of=("self",)).select_related("workspace")
    if history_only:
        qs = qs.defer(*THREAD_STATE_FIELDS)
    return qs.get(pk=thread.pk)
