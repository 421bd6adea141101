"""Provider state (Agent Framework's serialize()) and long-term memories (remember/recall)."""

from typing import Any

from django.db import IntegrityError, transaction

from contextstore.models import Event, Memory, ProviderState, Thread, Workspace
from contextstore.redaction import redact_each, use_workspace
from contextstore.services.common import Actor, audit


def provider_state_put(*, thread: Thread, provider: str, state: Any, actor: Actor) -> ProviderState:
    [state] = redact_each(use_workspace(thread.workspace), [state])
    with transaction.atomic():
        try:
            with transaction.atomic():
                obj, created = ProviderState.objects.select_for_update().get_or_create(
                    thread=thread, provider=provider, defaults={"state": state}
                )
        except IntegrityError:
            obj, created = ProviderState.objects.select_for_update().get(
                thread=thread, provider=provider), False
        if not created:
            obj.state = state
            obj.version += 1
            obj.save(update_fields=["state", "version", "updated_at"])
        audit(actor=actor, action="provider_state.put", target=obj, workspace=thread.workspace,
              thread=thread.pk, provider=provider, version=obj.version)
    return obj


def memory_remember(
    *, workspace: Workspace, user_id: str, content: str, actor: Actor, key: str | None = None,
    data: Any = None, source_event: Event | None = None,
) -> tuple[Memory, bool]:
    """Store a long-term fact about an end user; with a key, the fact is replaced in place."""
    content, data = redact_each(use_workspace(workspace), [content, data])
    with transaction.atomic():
        if key is None:
            memory, created = Memory.objects.create(
                workspace=workspace, user_id=user_id, content=content, data=data,
                source_event=source_event), True
        else:
            try:
                with transaction.atomic():
                    memory, created = Memory.objects.update_or_create(
                        workspace=workspace, user_id=user_id, key=key,
                        defaults={"content": content, "data": data, "source_event": source_event},
                    )
            except IntegrityError:
                memory, created = Memory.objects.get(workspace=workspace, user_id=user_id, key=key), False
                memory.content, memory.data, memory.source_event = content, data, source_event
                memory.save()
        audit(actor=actor, action="memory.remember", target=memory, workspace=workspace,
              user_id=user_id, key=key, created=created)
    return memory, created
