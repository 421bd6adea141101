"""Nooa context blocks: fixed value or live expression, prefix or suffix, None suppresses."""

from typing import Any

from django.db import transaction

from contextstore.errors import NotFound
from contextstore.models import ContextBlock, ContextBlockVersion, Thread
from contextstore.redaction import redact, use_workspace
from contextstore.services.common import UNSET, Actor, audit, lock_thread
from contextstore.services.history import context_inputs_changed
from contextstore.tokens import count_tokens


def block_upsert(
    *, thread: Thread, name: str, actor: Actor, value: str | None = UNSET, expr: str | None = UNSET,
    placement: str = UNSET, order: int = UNSET,
) -> tuple[ContextBlock, bool]:
    """Create or change a block. Giving value=None (and no expr) suppresses it without removing.

    The block's shape is checked at every door that takes one (contextstore/blockspec.py)."""
    with transaction.atomic():
        locked = lock_thread(thread)  # two writers creating one name queue here, not on the index
        if isinstance(value, str):
            value, _ = redact(use_workspace(locked.workspace), value)
        result = _apply(thread=locked, name=name, actor=actor, value=value, expr=expr,
                        placement=placement, order=order, action=None)
    thread.context_generation = locked.context_generation  # the caller's thread renders anew
    return result


def _next_version(thread: Thread, name: str) -> int:
    """Versions keep counting across a delete, so every kept version has its own number."""
    last = (ContextBlockVersion.objects.filter(thread=thread, name=name)
            .order_by("-version").values_list("version", flat=True).first())
    return (last or 0) + 1


def _keep_version(block: ContextBlock, *, actor: Actor, reason: str,
                  deleted: bool = False) -> ContextBlockVersion:
    return ContextBlockVersion.objects.create(
        thread_id=block.thread_id, name=block.name, version=block.version, value=block.value,
        expr=block.expr, placement=block.placement, order=block.order,
        token_count=block.token_count, deleted=deleted, actor=actor.label[:200], reason=reason)


def _apply(
    *, thread: Thread, name: str, actor: Actor, value: Any, expr: Any, placement: Any, order: Any,
    action: str | None, **details: Any,
) -> tuple[ContextBlock, bool]:
    """Change (or create) a block under the thread lock and keep the new version."""
    block = ContextBlock.objects.filter(thread=thread, name=name).first()
    created = block is None
    if block is None:
        block = ContextBlock(thread=thread, name=name, version=0)
    changes: dict[str, Any] = {}
    if value is not UNSET:
        changes["value"] = value
        if expr is UNSET:
            changes["expr"] = None
    if expr is not UNSET:
        changes["expr"] = expr
        if value is UNSET:
            changes["value"] = None
    if placement is not UNSET:
        changes["placement"] = placement
    if order is not UNSET:
        changes["order"] = order
    changed = created or any(getattr(block, k) != v for k, v in changes.items())
    if not changed:
        return block, False
    for k, v in changes.items():
        setattr(block, k, v)
    block.version = _next_version(thread, name)
    block.token_count = count_tokens(block.value or "")
    block.save()
    context_inputs_changed(thread=thread)
    action = action or ("block.create" if created else "block.update")
    _keep_version(block, actor=actor, reason=action.removeprefix("block."))
    audit(actor=actor, action=action, target=block, workspace=thread.workspace, thread=thread.pk,
          name=name, version=block.version, fields=sorted(changes), **details)
    return block, created


def block_delete(*, thread: Thread, name: str, actor: Actor) -> None:
    caller = thread
    with transaction.atomic():
        thread = lock_thread(thread)
        block = ContextBlock.objects.filter(thread=thread, name=name).first()
        if block is None:
            raise NotFound(f"No block named {name!r} on this thread.")
        # The deletion is a version of its own (the content it removed), so restoring the
        # version before it brings the block back.
        block.version = _next_version(thread, name)
        _keep_version(block, actor=actor, reason="delete", deleted=True)
        audit(actor=actor, action="block.delete", target=block, workspace=thread.workspace,
              thread=thread.pk, name=name, version=block.version)
        block.delete()
        context_inputs_changed(thread=thread)
    caller.context_generation = thread.context_generation


def block_restore(*, thread: Thread, name: str, version: int, actor: Actor) -> ContextBlock:
    """Make a kept version the block's content again, as a new version (undo of update/delete).

    Restoring a deletion's version restores the content the deletion removed.
    """
    with transaction.atomic():
        locked = lock_thread(thread)
        kept = ContextBlockVersion.objects.filter(thread=locked, name=name, version=version).first()
        if kept is None:
            raise NotFound(f"Block {name!r} has no version {version}.")
        block, _ = _apply(thread=locked, name=name, actor=actor, value=kept.value, expr=kept.expr,
                          placement=kept.placement, order=kept.order, action="block.restore",
                          restored_version=version)
    thread.context_generation = locked.context_generation
    return block
