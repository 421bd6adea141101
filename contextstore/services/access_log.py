"""Who looked at what: reads of agent history are audited where it matters (a session's page,
a thread's page, what the model sees, an LLM call "as sent", a render record, an export, and
the API's events and context reads), at most one row per (actor, action, object, hour).

The row goes to ReadAudit, not AuditLog: AuditLog is one row per change, and a read happens
far more often. The hour's unique key makes the dedupe race-free: every read that may be new
runs one INSERT ... ON CONFLICT DO NOTHING, so two readers at once leave one row and neither
fails. An agent reads its context before every model call, so a per-process LRU of the keys
already written skips even that statement for the rest of the hour (it remembers a key once
its insert committed; a miss only costs the statement, and the constraint keeps it right).
Reads are never counted: the row says that someone read the object in that hour, and from
when.
"""

import threading
from collections import OrderedDict
from datetime import datetime

from django.db import connection, models, transaction
from django.utils import timezone

from contextstore.db import insert_sql
from contextstore.models import ReadAudit
from contextstore.services.common import Actor

Action = ReadAudit.Action

SEEN_MAX = 10_000
_seen: OrderedDict[tuple, None] = OrderedDict()
_seen_lock = threading.Lock()


def actor_key(actor: Actor) -> str:
    """The actor as one non-null value for the unique key (NULLs never collide in one)."""
    if actor.user is not None:
        return f"user:{actor.user.pk}"
    if actor.token is not None:
        return f"token:{actor.token.pk}"
    return f"{actor.type}:{actor.label}"[:220]


def _remember(key: tuple) -> None:
    with _seen_lock:
        _seen[key] = None
        _seen.move_to_end(key)
        while len(_seen) > SEEN_MAX:
            _seen.popitem(last=False)


def forget_seen() -> None:
    """Empty this process's memory of written rows (tests)."""
    with _seen_lock:
        _seen.clear()


def record_read(
    *, actor: Actor, action: Action, target: models.Model, workspace_id: int,
    session_id: int | None, now: datetime | None = None,
) -> bool:
    """Note that `actor` read `target`; True when it took a statement (not known to this process
    for this hour), False when it was skipped. Call it once the read succeeded."""
    now = now or timezone.now()
    hour = now.replace(minute=0, second=0, microsecond=0)
    who = actor_key(actor)
    target_type = target._meta.model_name or ""
    key = (who, str(action), target_type, str(target.pk), hour)
    with _seen_lock:
        if key in _seen:
            _seen.move_to_end(key)
            return False
    # The ORM's INSERT ... ON CONFLICT DO NOTHING, compiled once per process (db.insert_sql):
    # bulk_create would build it again on every call.
    text, params = insert_sql(ReadAudit, [ReadAudit(
        workspace_id=workspace_id, session_id=session_id, actor_key=who, actor_type=actor.type,
        actor_user_id=actor.user.pk if actor.user else None,
        actor_token_id=actor.token.pk if actor.token else None, actor_label=actor.label[:200],
        action=action, target_type=target_type, target_id=str(target.pk), hour=hour,
        first_at=now, ip=actor.ip,
    )], ignore_conflicts=True)
    with connection.cursor() as cursor:
        cursor.execute(text, params)
    # Remembered once committed: a rolled-back read leaves no row, and no memory of one.
    transaction.on_commit(lambda: _remember(key))
    return True
