"""Whole-thread operations: AgentScope's clearContext and peteos' fork."""

from django.db import IntegrityError, transaction
from django.utils import timezone

from contextstore.errors import Conflict, InvalidInput
from contextstore.models import ContextBlock, Event, Thread
from contextstore.services.common import Actor, audit, lock_thread
from contextstore.services.document import document_write
from contextstore.services.events import session_count_events


def thread_clear_context(*, thread: Thread, actor: Actor) -> int:
    """AgentScope clearContext: the conversation and its summary leave the working context.

    State (tasks, permissions, plan, tool sub-state), memory and blocks stay; nothing is deleted
    (events get status `cleared` and remain browsable). Returns how many events were cleared.
    """
    with transaction.atomic():
        thread = lock_thread(thread)
        cleared = Event.objects.filter(thread=thread, status=Event.Status.ACTIVE).update(
            status=Event.Status.CLEARED
        )
        thread.active_event_count = 0
        thread.active_tokens = 0
        document_write(thread=thread, actor=actor, reason="clear_context", values={"summary": ""},
                       thread_fields=("active_event_count", "active_tokens"))
        audit(actor=actor, action="thread.clear_context", target=thread, workspace=thread.workspace,
              cleared=cleared)
    return cleared


def thread_fork(
    *, thread: Thread, name: str, actor: Actor, start_seq: int | None = None,
    end_seq: int | None = None, system_prompt: str | None = None,
) -> Thread:
    """peteos fork_insert_sequence: a new thread with the active events created in
    [start_seq, end_seq) (None = open end), renumbered from 1 in working-context order.

    The fork keeps the parent's state, memory, blocks, tool definitions and (unless given a new
    one) system prompt, and records its lineage.
    """
    if not isinstance(name, str) or not name or len(name) > 200:
        raise InvalidInput("name is required (at most 200 characters).", details={"name": "required"})
    for label, value in (("start_seq", start_seq), ("end_seq", end_seq)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise InvalidInput(f"{label} must be an integer.", details={label: value})
    if start_seq is not None and end_seq is not None and start_seq > end_seq:
        raise InvalidInput("start_seq must not be after end_seq.")
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise InvalidInput("system_prompt must be a string.", details={"system_prompt": "string"})

    with transaction.atomic():
        parent = lock_thread(thread)
        source = Event.objects.filter(thread=parent, status=Event.Status.ACTIVE)
        if start_seq is not None:
            source = source.filter(seq__gte=start_seq)
        if end_seq is not None:
            source = source.filter(seq__lt=end_seq)
        try:
            with transaction.atomic():
                child = Thread.objects.create(
                    workspace_id=parent.workspace_id, session_id=parent.session_id, name=name,
                    document={
                        **parent.document,
                        "system_prompt": parent.system_prompt if system_prompt is None
                        else system_prompt,
                        "extra": {**parent.extra, "forked_from": {"thread": parent.pk,
                                                                   "last_seq": parent.last_seq}},
                    },
                    parent=parent, fork_start_seq=start_seq, fork_end_seq=end_seq,
                )
        except IntegrityError as exc:
            raise Conflict(f"This session already has a thread named {name!r}.",
                           code="name_taken", details={"name": name}) from exc
        copies = []
        now = timezone.now()
        for seq, event in enumerate(source.order_by("position").iterator(chunk_size=2000), 1):
            copies.append(Event(
                thread=child, seq=seq, position=seq, type=event.type, role=event.role,
                content=event.content, parts=event.parts, data=event.data, call_id=event.call_id,
                step=event.step, anchor=event.anchor, client_id=event.client_id,
                payload_hash=event.payload_hash, token_count=event.token_count,
                thinking_tokens=event.thinking_tokens, visible=event.visible,
                occurred_at=event.occurred_at,
            ))
        Event.objects.bulk_create(copies, batch_size=1000)
        visible = [e for e in copies if e.visible]
        child.last_seq = len(copies)
        child.event_count = len(copies)
        child.token_total = sum(e.token_count for e in copies)
        child.active_event_count = len(visible)
        child.active_tokens = sum(e.token_count for e in visible)
        child.last_event_at = now if copies else None
        child.save()
        ContextBlock.objects.bulk_create([
            ContextBlock(thread=child, name=b.name, value=b.value, expr=b.expr,
                         placement=b.placement, order=b.order, version=1, token_count=b.token_count)
            for b in parent.blocks.all()
        ])
        document_write(thread=child, actor=actor, reason=f"fork of thread {parent.pk}")
        session_count_events(session_id=parent.session_id, events=copies, now=now, threads=1)
        audit(actor=actor, action="thread.fork", target=child, workspace=parent.workspace,
              parent=parent.pk, start_seq=start_seq, end_seq=end_seq, events=len(copies))
    return child
