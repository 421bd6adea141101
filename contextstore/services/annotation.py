"""Annotation queues (Langfuse's): score configurations, queues that ask people to score
sessions, threads and LLM calls with them, and the review loop: the next pending item for a
person, completed with that person's scores (ordinary Score rows, services/scores.py) or
skipped.

Handing out: a person gets the pending item they already hold, else the first pending one
nobody holds (in queue order), which they then hold for LEASE. Two reviewers asking at once
never get the same item: the candidate row is locked with SELECT ... FOR UPDATE SKIP LOCKED on
PostgreSQL (the second asker passes over it to the next), and the lease is taken by a
conditional UPDATE (pending, lease free or expired), which is the lock on SQLite (writes there
are serial). An abandoned item comes back when its lease expires.

Shapes are checked by the doors (annotationspec, api/annotation.py, views/annotation.py)."""

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Max, Q, QuerySet
from django.utils import timezone

from contextstore.errors import Conflict
from contextstore.models import (
    AnnotationItem,
    AnnotationQueue,
    Score,
    ScoreConfig,
    Session,
    Thread,
    Workspace,
)
from contextstore.services.common import Actor, audit
from contextstore.services.scores import score_add

LEASE = timedelta(minutes=15)
MAX_BULK = 1000  # sessions added from one filter of the session list
Target = tuple[Session, Thread | None, int | None]


def score_config_create(*, workspace: Workspace, actor: Actor, name: str, data_type: str,
                        min_value: float | None = None, max_value: float | None = None,
                        categories: list[str] | None = None, description: str = "") -> ScoreConfig:
    """A new configuration (fields checked by annotationspec.score_config_fields)."""
    try:
        with transaction.atomic():
            config = ScoreConfig.objects.create(
                workspace=workspace, name=name, data_type=data_type, min_value=min_value,
                max_value=max_value, categories=categories or [], description=description,
                created_by=actor.user)
            audit(actor=actor, action="score_config.create", target=config, workspace=workspace,
                  name=name, data_type=data_type)
    except IntegrityError:
        raise Conflict(f"A score configuration named {name!r} exists already (archive it and "
                       "choose another name to change it).", details={"name": "taken"}) from None
    return config


def score_config_archive(*, config: ScoreConfig, archived: bool, actor: Actor) -> ScoreConfig:
    """Archived configs are offered to no new queue; their name's scores are still checked."""
    with transaction.atomic():
        ScoreConfig.objects.filter(pk=config.pk).update(archived=archived)
        config.archived = archived
        audit(actor=actor, action="score_config.archive" if archived else "score_config.restore",
              target=config, workspace=config.workspace, name=config.name)
    return config


def queue_create(*, workspace: Workspace, actor: Actor, name: str, configs: list[ScoreConfig],
                 description: str = "", assignees: Iterable[User] = ()) -> AnnotationQueue:
    """A queue asking for `configs` (the workspace's, unarchived: checked by its door)."""
    try:
        with transaction.atomic():
            queue = AnnotationQueue.objects.create(workspace=workspace, name=name,
                                                   description=description, created_by=actor.user)
            queue.score_configs.set(configs)
            queue.assignees.set(list(assignees))
            audit(actor=actor, action="annotation_queue.create", target=queue, workspace=workspace,
                  name=name, score_configs=[c.pk for c in configs])
    except IntegrityError:
        raise Conflict(f"A queue named {name!r} exists already.", details={"name": "taken"}) from None
    return queue


def _kind(thread: Thread | None, seq: int | None) -> str:
    if thread is None:
        return AnnotationItem.Kind.SESSION
    return AnnotationItem.Kind.THREAD if seq is None else AnnotationItem.Kind.CALL


def queue_add_items(*, queue: AnnotationQueue, targets: Iterable[Target], actor: Actor) -> int:
    """Add sessions, threads or LLM calls (a call by its start's seq: the door resolves it) of
    the queue's workspace; one already in the queue is not added again. Returns how many were
    added."""
    with transaction.atomic():
        AnnotationQueue.objects.select_for_update().filter(pk=queue.pk).first()  # one adder at a time
        existing: set[tuple[int, int | None, int | None]] = set(
            AnnotationItem.objects.filter(queue=queue).values_list("session_id", "thread_id", "seq"))
        rank = AnnotationItem.objects.filter(queue=queue).aggregate(top=Max("rank"))["top"] or 0
        new: list[AnnotationItem] = []
        for session, thread, seq in targets:
            key = (session.pk, thread.pk if thread else None, seq)
            if key in existing or session.workspace_id != queue.workspace_id:
                continue
            existing.add(key)
            rank += 1
            new.append(AnnotationItem(workspace_id=queue.workspace_id, queue=queue,
                                      kind=_kind(thread, seq), session=session, thread=thread,
                                      seq=seq, rank=rank, created_by=actor.user))
        AnnotationItem.objects.bulk_create(new)
        if new:
            audit(actor=actor, action="annotation_queue.add", target=queue,
                  workspace=queue.workspace, added=len(new))
    return len(new)


def queue_add_sessions(*, queue: AnnotationQueue, sessions: QuerySet[Session], actor: Actor) -> int:
    """The sessions a filter of the session list keeps (at most MAX_BULK), as items."""
    found = list(sessions.filter(workspace_id=queue.workspace_id)[:MAX_BULK])
    return queue_add_items(queue=queue, targets=((s, None, None) for s in found), actor=actor)


def _free(now: datetime) -> Q:
    return Q(leased_until__isnull=True) | Q(leased_until__lte=now)


def queue_next_item(*, queue: AnnotationQueue, user: User,
                    now: datetime | None = None) -> AnnotationItem | None:
    """The pending item `user` holds (its lease renewed), else the first free one, leased to
    them; None when every pending item is held by others or none is left."""
    now = now or timezone.now()
    pending = AnnotationItem.objects.filter(queue=queue, status=AnnotationItem.Status.PENDING)
    for _ in range(5):  # a conditional UPDATE lost to another reviewer: try the next row
        with transaction.atomic():
            held = pending.filter(leased_by=user, leased_until__gt=now).order_by("rank", "id").first()
            candidate = held or (pending.filter(_free(now)).order_by("rank", "id")
                                 .select_for_update(skip_locked=True, of=("self",)).first())
            if candidate is None:
                return None
            claim = pending.filter(pk=candidate.pk)
            if held is None:
                claim = claim.filter(_free(now))
            if claim.update(leased_by=user, leased_until=now + LEASE):
                candidate.leased_by, candidate.leased_until = user, now + LEASE
                return candidate
    return None


def _locked(item: AnnotationItem, actor: Actor, now: datetime) -> AnnotationItem:
    """The item, locked, if `actor` may act on it: pending, and not held by someone else."""
    locked = AnnotationItem.objects.select_for_update().get(pk=item.pk)
    if locked.status == AnnotationItem.Status.COMPLETED:
        who = locked.completed_label or "someone"
        raise Conflict(f"This item was completed already, by {who}.", details={"status": "completed"})
    held = locked.leased_until is not None and locked.leased_until > now
    me = actor.user.pk if actor.user else None
    if held and locked.leased_by_id is not None and locked.leased_by_id != me:
        raise Conflict("Someone else is reviewing this item now.", details={"status": "leased"})
    return locked


def queue_complete_item(*, item: AnnotationItem, scores: list[dict[str, Any]], actor: Actor,
                        now: datetime | None = None) -> list[Score]:
    """Store the reviewer's scores on the item's target (a thread's go on its session) and mark
    it completed by them. `scores` are checked by the door against the queue's configs:
    each {"name", "data_type", "value", "comment"}."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = _locked(item, actor, now)
        on_call = locked.kind == AnnotationItem.Kind.CALL
        made = [score_add(session=locked.session, thread=locked.thread if on_call else None,
                          seq=locked.seq if on_call else None, actor=actor, **score)
                for score in scores]
        AnnotationItem.objects.filter(pk=locked.pk).update(
            status=AnnotationItem.Status.COMPLETED, completed_by=actor.user,
            completed_label=actor.label[:200], completed_at=now, leased_by=None, leased_until=None)
        audit(actor=actor, action="annotation_item.complete", target=locked,
              workspace=locked.session.workspace, queue=locked.queue_id, scores=[s.pk for s in made])
    item.status, item.completed_at = AnnotationItem.Status.COMPLETED, now
    return made


def queue_skip_item(*, item: AnnotationItem, actor: Actor, now: datetime | None = None) -> None:
    """Hand the item back and move it to the queue's end: the skipper is given another next."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = _locked(item, actor, now)
        rank = AnnotationItem.objects.filter(queue_id=locked.queue_id).aggregate(top=Max("rank"))["top"]
        AnnotationItem.objects.filter(pk=locked.pk).update(rank=(rank or 0) + 1, leased_by=None,
                                                           leased_until=None)
        audit(actor=actor, action="annotation_item.skip", target=locked,
              workspace=locked.session.workspace, queue=locked.queue_id)
