"""Comments on a session or on one event of its threads (an LLM call is named by its call's
seq, services/scores.py does the same). Anyone who may edit the workspace comments; only the
author while they still may, or an admin of the workspace, edits or deletes a comment. Every
change is audited; the audit row keeps the comment's length, never its text."""

from django.db import transaction
from django.utils import timezone

from contextstore.errors import Forbidden, NotFound
from contextstore.models import Comment, Event, Membership, Session, Thread
from contextstore.services.common import Actor, audit


def event_target(*, session: Session, thread: Thread | None, seq: int | None,
                 types: tuple[str, ...] | None = None) -> tuple[Thread | None, int | None]:
    """The (thread, seq) a comment or score is on: both None (the session), or an event of a
    thread of this session (of one of `types`, when given). Anything else is a clear error."""
    if thread is None and seq is None:
        return None, None
    assert thread is not None and seq is not None, "a door names both, from its URL, or neither"
    if thread.session_id != session.pk:
        raise NotFound("No such thread in this session.")
    found = Event.objects.filter(thread=thread, seq=seq)
    if types is not None:
        found = found.filter(type__in=types)
    if not found.exists():
        what = "LLM call" if types else "event"
        raise NotFound(f"No {what} at seq {seq} of thread {thread.pk}.")
    return thread, seq


def may_change(comment: Comment, actor: Actor) -> bool:
    """An admin of the comment's workspace (a superuser too), or its author while they may still
    edit the workspace: the role is the one held now, not when the comment was written (an
    author demoted to viewer, or removed, changes nothing)."""
    user = actor.user
    if user is None:
        return False
    if user.is_superuser:
        return True
    role = (Membership.objects.filter(workspace_id=comment.workspace_id, user=user)
            .values_list("role", flat=True).first())
    if role == Membership.Role.ADMIN:
        return True
    return comment.author_id == user.pk and role == Membership.Role.EDITOR


def comment_add(*, session: Session, text: str, actor: Actor, thread: Thread | None = None,
                seq: int | None = None) -> Comment:
    """Store a comment whose text its door checked (annotationspec.comment_text)."""
    text = text.strip()
    thread, seq = event_target(session=session, thread=thread, seq=seq)
    with transaction.atomic():
        comment = Comment.objects.create(
            workspace_id=session.workspace_id, session=session, thread=thread, seq=seq,
            author=actor.user, author_label=actor.label[:200], text=text)
        audit(actor=actor, action="comment.add", target=comment, workspace=session.workspace,
              session=session.pk, thread=thread.pk if thread else None, seq=seq, length=len(text))
    return comment


def comment_edit(*, comment: Comment, text: str, actor: Actor) -> Comment:
    if not may_change(comment, actor):
        raise Forbidden("Only the author or a workspace admin can edit this comment.")
    text = text.strip()  # checked by its door (annotationspec.comment_text)
    with transaction.atomic():
        comment.text, comment.edited_at = text, timezone.now()
        comment.save(update_fields=["text", "edited_at"])
        audit(actor=actor, action="comment.edit", target=comment, workspace=comment.session.workspace,
              session=comment.session_id, length=len(text))
    return comment


def comment_delete(*, comment: Comment, actor: Actor) -> None:
    if not may_change(comment, actor):
        raise Forbidden("Only the author or a workspace admin can delete this comment.")
    with transaction.atomic():
        audit(actor=actor, action="comment.delete", target=comment,
              workspace=comment.session.workspace, session=comment.session_id,
              thread=comment.thread_id, seq=comment.seq)
        comment.delete()
