"""Share links (issue 31): a member who may write makes a link to a session, an event or an
LLM call that opens a read-only view of it for anyone who holds it, without logging in, until
it expires or is revoked.

The token is 32 random bytes (urlsafe); only its sha256 is stored, with a short prefix for
the list. Opening a link is a read like any other: services/access_log.record_read writes
the ReadAudit row (action "share.view", the actor "share link <prefix>" or the signed-in
person), so the session page's "Viewed by" shows it.
"""

import hashlib
import secrets
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from contextstore.errors import Gone, InvalidInput, NotFound
from contextstore.models import AuditLog, Event, ReadAudit, Session, ShareLink, Thread
from contextstore.selectors.calls import CALL_END, CALL_START
from contextstore.services.access_log import record_read
from contextstore.services.common import Actor, audit

# The expiry choices the dashboard offers, by name; nothing lives longer than 30 days.
EXPIRIES: dict[str, timedelta] = {
    "1h": timedelta(hours=1), "1d": timedelta(days=1), "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}
EXPIRY_LABELS = {"1h": "1 hour", "1d": "1 day", "7d": "7 days", "30d": "30 days"}


def _hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def share_link_create(
    *, session: Session, kind: str, actor: Actor, expires_in: str = "1d",
    thread: Thread | None = None, seq: int | None = None, now: datetime | None = None,
) -> tuple[ShareLink, str]:
    """Make a link; returns it and the raw token, which is shown once and never stored. The
    request's shape (kind, expiry, a thread of this session and a seq) is checked by its door
    (views/sharing.check_share_request)."""
    if kind == ShareLink.Kind.SESSION:
        thread, seq = None, None
    else:
        assert thread is not None and thread.session_id == session.pk and seq is not None
        types = (CALL_START, CALL_END) if kind == ShareLink.Kind.CALL else None
        events = Event.objects.filter(thread=thread, seq=seq)
        if types:
            events = events.filter(type__in=types)
        if not events.exists():
            raise InvalidInput(f"Thread {thread.name} has no {'LLM call' if types else 'event'} #{seq}.")
    raw = secrets.token_urlsafe(32)
    now = now or timezone.now()
    with transaction.atomic():
        link = ShareLink.objects.create(
            workspace_id=session.workspace_id, session=session, thread=thread, kind=kind, seq=seq,
            prefix=raw[:8], token_hash=_hash(raw), created_by=actor.user,
            expires_at=now + EXPIRIES[expires_in])
        audit(actor=actor, action="share.create", target=link, workspace=session.workspace,
              session=session.pk, kind=kind, thread=thread.pk if thread else None, seq=seq,
              prefix=link.prefix, expires_at=link.expires_at.isoformat())
    return link, raw


def share_link_revoke(*, link: ShareLink, actor: Actor, now: datetime | None = None) -> ShareLink:
    with transaction.atomic():
        fresh = ShareLink.objects.select_for_update().get(pk=link.pk)
        if fresh.revoked_at is None:
            fresh.revoked_at = now or timezone.now()
            fresh.save(update_fields=["revoked_at"])
            audit(actor=actor, action="share.revoke", target=fresh, workspace=fresh.workspace,
                  session=fresh.session_id, kind=fresh.kind, thread=fresh.thread_id,
                  seq=fresh.seq, prefix=fresh.prefix)
    return fresh


def share_link_open(*, raw: str, actor: Actor | None = None, ip: str | None = None,
                    now: datetime | None = None) -> ShareLink:
    """The live link a token names, its open audited; NotFound for no such link, Gone for one
    expired or revoked. `actor` is the signed-in person, if any; else the link itself."""
    now = now or timezone.now()
    link = (ShareLink.objects.select_related("session", "thread", "workspace")
            .filter(token_hash=_hash(raw)).first()) if raw else None
    if link is None:
        raise NotFound("No such share link.")
    if link.revoked_at is not None:
        raise Gone("This share link was revoked.")
    if link.expires_at <= now:
        raise Gone("This share link has expired.")
    who = actor or Actor(AuditLog.ActorType.SHARE, f"share link {link.prefix}", ip=ip)
    record_read(actor=who, action=ReadAudit.Action.SHARE_VIEW, target=link.thread or link.session,
                workspace_id=link.workspace_id, session_id=link.session_id, now=now)
    return link

