from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import models

from contextstore.db import PreparedGet
from contextstore.errors import Conflict
from contextstore.models import ApiToken, AuditLog, Job, Thread, Workspace
from contextstore.selectors.activity import ACTIONS
from contextstore.selectors.threads import THREAD_STATE_FIELDS

UNSET: Any = object()


@dataclass(frozen=True)
class Actor:
    """Who makes a change: a person, an API token, a worker or the system itself."""

    type: str
    label: str
    user: User | None = None
    token: ApiToken | None = None
    ip: str | None = None

    @classmethod
    def for_user(cls, user: User, ip: str | None = None) -> "Actor":
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
    row = audit_row(actor=actor, action=action, target=target, workspace=workspace, **details)
    row.save(force_insert=True)
    return row


# FOR NO KEY UPDATE: writers of a thread wait for each other, but rows that merely reference
# it (a render record, an audit row, a job) are inserted meanwhile; their foreign-key check
# takes FOR KEY SHARE, which FOR UPDATE would make wait for the writer's commit.
_LOCK_THREAD = {
    history_only: PreparedGet(lambda pk, workspace_id, history_only=history_only: (
        Thread.objects.select_for_update(of=("self",), no_key=True).select_related("workspace")
        .defer(*(THREAD_STATE_FIELDS if history_only else ()))
        .filter(pk=pk, workspace_id=workspace_id)))
    for history_only in (False, True)
}


def lock_thread(thread: Thread, *, history_only: bool = False) -> Thread:
    """Re-read the thread under a row lock; every change to its history or state starts here.

    The row is found by id and workspace: a reference to a thread that is not read yet
    (`Thread(pk=..., workspace_id=...)`, the API's append) never locks another workspace's row.
    history_only skips the document, so appending costs the same however big the
    agent's state has grown. Compiled once per process (db.PreparedGet): every append runs it.
    """
    locked = _LOCK_THREAD[history_only].get(thread.pk, thread.workspace_id)
    if locked is None:
        raise Thread.DoesNotExist("Thread matching query does not exist.")
    return locked


def operation_key(thread_id: int) -> str:
    """A thread's pending long operation (services/operations.py): at most one at a time."""
    return f"operation:{thread_id}"


def no_operation_pending(thread: Thread) -> None:
    """Clear, un-clear, collapse and undo wait while a long operation is being done in batches
    on the thread: its half-moved events are the job's to finish."""
    if Job.objects.filter(pending_key=operation_key(thread.pk)).exists():
        raise Conflict("A long operation (clear, un-clear or collapse) is in progress on this "
                       "thread; try again when it is done.", code="operation_pending")


def audit_row(
    *, actor: Actor, action: str, target: models.Model, workspace: Workspace | None, **details: Any
) -> AuditLog:
    """An unsaved audit record (for `db.insert_sql`); `audit` saves one at once."""
    return AuditLog(
        workspace=workspace, actor_type=actor.type, actor_user=actor.user,
        actor_token=actor.token, actor_label=actor.label[:200], action=action,
        target_type=target._meta.model_name,  # type: ignore[misc]  # None only before class creation
        target_id=str(target.pk), details=details,
        ip=actor.ip, thread_id=audit_thread_id(action, target, details),
    )


def audit_thread_id(action: str, target: Any, details: dict[str, Any]) -> int | None:
    """The thread a row belongs to in the thread page's activity log (selectors/activity.py):
    only the actions that log shows, so its index holds none of the appends and syncs."""
    if action not in ACTIONS:
        return None
    if action in ("thread.fork", "thread.delete_fork"):
        target = None  # the parent's log: the fork is something done to (or with) the parent
        details = {"thread": details.get("parent")}
    if isinstance(target, Thread):
        return target.pk
    thread = details.get("thread")
    return thread if isinstance(thread, int) and not isinstance(thread, bool) else None
