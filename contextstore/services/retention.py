"""Retention: delete events older than N days, or whole sessions inactive for N days.

The policy is per workspace and overridable per session, rule by rule (a session's own value,
else its workspace's, else none: keep forever); a legal hold on a session exempts it from both.
Beat runs `retention_run`, which deletes in bounded batches: each batch is one short
transaction on one thread (its row lock, as an append takes it), so writers wait for a batch at
most, never for a run; nothing locks a table. A batch deletes the thread's oldest expired rows
(by seq) and moves every counter the rows fed (history's counters: thread, session, runs,
session model names), so a crash between batches leaves a consistent record and the next run
finds what is left to delete. Each batch writes one audit row with its counts.

What else keeps pointing at deleted history stays consistent:
- a collapse whose Summary went is deleted with it (its originals are older, so gone already);
  one whose originals went counts them in `expired_count` (undo is refused, the page says so);
- a memory whose source event went keeps its content and says `source_expired`;
- a render record names event ids only: rebuilding it leaves out the ones gone and says how
  many expired (selectors/renders);
- the thread's `expired_seq` keeps the newest deleted seq, so seq is never reused.
- the long-term store keeps versions for the event rule's days (store_versions_prune).

(The replay store of framework saves expires by itself: services/commits.commit_records_prune.)
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from contextstore.models import (
    CallCacheVerdict,
    CallFigure,
    Collapse,
    Event,
    Memory,
    Session,
    Thread,
    Workspace,
)
from contextstore.services import history
from contextstore.services.common import Actor, audit, lock_thread
from contextstore.services.store import store_versions_prune

ACTOR = Actor.system("retention")
UNSET: Any = object()


@dataclass(frozen=True)
class Policy:
    """The rules that apply to one session; None means the rule does not apply."""

    event_days: int | None = None
    session_days: int | None = None
    legal_hold: bool = False

    @property
    def applies(self) -> bool:
        return not self.legal_hold and (self.event_days is not None or self.session_days is not None)


def policy_of(session: Session, workspace: Workspace | None = None) -> Policy:
    """Session override > workspace policy > none, rule by rule; a legal hold exempts."""
    workspace = workspace or session.workspace
    if session.legal_hold:
        return Policy(legal_hold=True)
    return Policy(
        event_days=(session.retention_event_days if session.retention_event_days is not None
                    else workspace.retention_event_days),
        session_days=(session.retention_session_days if session.retention_session_days is not None
                      else workspace.retention_session_days),
    )


def session_expires_at(session: Session, policy: Policy | None = None) -> datetime | None:
    """When the whole session will be deleted if nothing happens in it; None: never."""
    policy = policy or policy_of(session)
    if policy.legal_hold or policy.session_days is None:
        return None
    return session.last_activity_at + timedelta(days=policy.session_days)


def retention_policy_set(
    *, target: Workspace | Session, actor: Actor, event_days: int | None = UNSET,
    session_days: int | None = UNSET, legal_hold: bool = UNSET,
) -> Workspace | Session:
    """Set a workspace's policy or a session's override (None: inherit) and a session's legal
    hold. The days are retentionspec.check_days's and the hold a bool: the doors' (the API's
    serializers, the admin's forms)."""
    changes: dict[str, Any] = {}
    if event_days is not UNSET:
        changes["retention_event_days"] = event_days
    if session_days is not UNSET:
        changes["retention_session_days"] = session_days
    if legal_hold is not UNSET:
        changes["legal_hold"] = legal_hold
    changes = {k: v for k, v in changes.items() if getattr(target, k) != v}
    if not changes:
        return target
    workspace = target if isinstance(target, Workspace) else target.workspace
    with transaction.atomic():
        type(target).objects.filter(pk=target.pk).update(**changes)
        for field, value in changes.items():
            setattr(target, field, value)
        audit(actor=actor, action="retention.policy", target=target, workspace=workspace, **changes)
    return target


# --- the run -----------------------------------------------------------------------------------

def _candidates() -> Any:
    """Sessions some rule may apply to (the rest are never read)."""
    return Session.objects.filter(legal_hold=False).filter(
        Q(retention_event_days__isnull=False) | Q(retention_session_days__isnull=False)
        | Q(workspace__retention_event_days__isnull=False)
        | Q(workspace__retention_session_days__isnull=False)
    ).select_related("workspace").order_by("pk")


def retention_run(
    *, now: datetime | None = None, batch_size: int | None = None, max_batches: int | None = None,
) -> dict[str, int]:
    """Beat: apply every policy, at most max_batches batches of at most batch_size events.
    Sessions are visited by id (keyset pages); what a run leaves is found again by the next
    one, since every deleted row is gone for good. Returns what it did."""
    now = now or timezone.now()
    batch_size = batch_size or settings.RETENTION_BATCH_SIZE
    budget = max_batches if max_batches is not None else settings.RETENTION_MAX_BATCHES
    done = {"batches": 0, "events": 0, "sessions": 0}
    last = 0
    while budget > done["batches"]:
        page = list(_candidates().filter(pk__gt=last)[:200])
        if not page:
            break
        for session in page:
            last = session.pk
            session_retention_apply(session=session, now=now, batch_size=batch_size, done=done,
                                    budget=budget)
            if done["batches"] >= budget:
                break
    done["store_versions"] = _store_prune(now)
    return done


def _store_prune(now: datetime) -> int:
    """The long-term store under the workspace's event rule: versions older than it (not an
    item's current one) and items deleted before it go (services/store.py)."""
    pruned = 0
    for workspace in Workspace.objects.filter(retention_event_days__isnull=False):
        pruned += store_versions_prune(
            workspace=workspace, cutoff=now - timedelta(days=workspace.retention_event_days or 0))
    return pruned


def session_retention_apply(*, session: Session, now: datetime, batch_size: int,
                            done: dict[str, int], budget: int) -> None:
    """Apply one session's policy, adding to `done` and stopping when it reaches the budget."""
    policy = policy_of(session)
    if not policy.applies:
        return
    expires = session_expires_at(session, policy)
    if expires is not None and expires <= now:
        _session_expire(session=session, now=now, batch_size=batch_size, done=done, budget=budget)
    elif policy.event_days is not None:
        cutoff = now - timedelta(days=policy.event_days)
        for thread_pk in Thread.objects.filter(session=session).order_by("pk").values_list("pk", flat=True):
            while done["batches"] < budget:
                n = _expire_batch(thread_pk=thread_pk, workspace_id=session.workspace_id,
                                  cutoff=cutoff, batch_size=batch_size, now=now)
                if n is None:
                    break
                done["batches"] += 1
                done["events"] += n


def _session_expire(*, session: Session, now: datetime, batch_size: int, done: dict[str, int],
                    budget: int) -> None:
    """Delete an inactive session: its events in batches, then the rest in one transaction, as
    long as it stays inactive and unheld (re-checked by every batch)."""
    for thread_pk in Thread.objects.filter(session=session).order_by("pk").values_list("pk", flat=True):
        while True:
            if done["batches"] >= budget:
                return
            n = _expire_batch(thread_pk=thread_pk, workspace_id=session.workspace_id, cutoff=None,
                              batch_size=batch_size, now=now)
            if n is None:
                break
            done["batches"] += 1
            done["events"] += n
    if done["batches"] >= budget:
        return
    with transaction.atomic():
        # Threads before the session row: the order appends take them in, so no deadlock.
        list(Thread.objects.select_for_update().filter(session=session).order_by("pk")
             .values_list("pk", flat=True))
        fresh = Session.objects.select_for_update().select_related("workspace").filter(pk=session.pk).first()
        if fresh is None:
            return
        expires = session_expires_at(fresh)
        if expires is None or expires > now or Event.objects.filter(thread__session=fresh).exists():
            return  # came back to life (or under hold) meanwhile: a later run decides again
        audit(actor=ACTOR, action="retention.session_delete", target=fresh, workspace=fresh.workspace,
              key=fresh.key, user_id=fresh.user_id, threads=fresh.thread_count,
              last_activity_at=fresh.last_activity_at.isoformat())
        Collapse.objects.filter(thread__session=fresh).delete()  # none left with events; tidy
        fresh.delete()
        done["batches"] += 1
        done["sessions"] += 1


def _still_expiring(session_id: int, cutoff: datetime | None, now: datetime) -> bool:
    """Re-read under the thread's lock: a hold set or (for a session delete) activity since the
    run began stops the deletion."""
    session = Session.objects.select_related("workspace").filter(pk=session_id).first()
    if session is None:
        return False
    policy = policy_of(session)
    if not policy.applies:
        return False
    if cutoff is None:  # the whole session
        expires = session_expires_at(session, policy)
        return expires is not None and expires <= now
    return policy.event_days is not None


COUNTED = ("pk", "seq", "token_count", "visible", "status", "is_error", "run_id", "collapse_id",
            "type", "created_at")


def _expire_batch(*, thread_pk: int, workspace_id: int, cutoff: datetime | None, batch_size: int,
                  now: datetime) -> int | None:
    """Delete the thread's oldest rows written before cutoff (all its rows when None), at most
    batch_size, in one transaction; None when there is nothing (left) to delete."""
    with transaction.atomic():
        try:
            thread = lock_thread(Thread(pk=thread_pk, workspace_id=workspace_id), history_only=True)
        except Thread.DoesNotExist:
            return None
        if not _still_expiring(thread.session_id, cutoff, now):
            return None
        rows = Event.objects.filter(thread=thread)
        if cutoff is not None:
            rows = rows.filter(created_at__lt=cutoff)
        batch = list(rows.order_by("seq").only(*COUNTED)[:batch_size])
        if not batch:
            return None
        settled = events_delete_locked(thread=thread, events=batch, now=now)
        audit(actor=ACTOR, action="retention.events_delete", target=thread,
              workspace=thread.workspace, reason="session" if cutoff is None else "age",
              cutoff=cutoff.isoformat() if cutoff else None, events=len(batch),
              first_seq=batch[0].seq, last_seq=batch[-1].seq, **settled)
        return len(batch)


def events_delete_locked(*, thread: Thread, events: list[Event], now: datetime) -> dict[str, int]:
    """Delete `events` (rows of the locked, fresh thread read with `COUNTED`'s fields) and
    settle everything they fed or that points at them: history's counters, the collapses they
    summarise (deleted) or belong to (counting them expired), memories they sourced (kept, with
    `source_expired`), newer versions naming them. Shared by retention and erasure
    (services/erasure.py); returns what it settled, for the audit row."""
    pks = [e.pk for e in events]
    llm = {e.pk: e for e in Event.objects.filter(pk__in=pks, type__in=history.CALL_TYPES)
           .only("pk", "type", "data", "run_id")}
    for e in events:  # the rows that report usage, cost or a model name, with their data
        if e.pk in llm:
            e.data = llm[e.pk].data
    history.history_removed(thread=thread, events=events, now=now)
    # What points at the rows: collapses they summarise go, collapses they belong to count
    # them, memories keep their text, newer versions stop naming them.
    summaries = list(Collapse.objects.filter(summary_event_id__in=pks).values_list("pk", flat=True))
    members: dict[int, int] = {}
    for e in events:
        if e.collapse_id is not None and e.collapse_id not in summaries:
            members[e.collapse_id] = members.get(e.collapse_id, 0) + 1
    for collapse_pk, n in members.items():
        Collapse.objects.filter(pk=collapse_pk).update(expired_count=F("expired_count") + n)
    Event.objects.filter(collapse_id__in=summaries).update(collapse=None)
    Collapse.objects.filter(pk__in=summaries).delete()
    memories = Memory.objects.filter(source_event_id__in=pks).update(source_event=None,
                                                                     source_expired=True)
    Event.objects.filter(replaced_by_id__in=pks).update(replaced_by=None)
    CallFigure.objects.filter(event_id__in=pks)._raw_delete(CallFigure.objects.db)  # their figures
    CallCacheVerdict.objects.filter(call_id__in=pks)._raw_delete(CallCacheVerdict.objects.db)
    CallCacheVerdict.objects.filter(previous_id__in=pks).update(previous=None)
    # Everything that points at the rows was settled above: one DELETE, without Django's
    # collector reading the rows back to look for it again.
    Event.objects.filter(pk__in=pks)._raw_delete(Event.objects.db)
    return {"collapses_deleted": len(summaries), "collapses_expired": len(members),
            "memories": memories}


