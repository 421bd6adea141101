"""Which model a thread (or every thread of a session or workspace) talks to: model name,
context window and tokens reserved for the answer. Renders default to window - reserve."""

from typing import Any

from django.db import transaction

from contextstore.errors import Conflict, InvalidInput
from contextstore.models import Session, Thread, Workspace
from contextstore.services.common import UNSET, Actor, audit

MAX_WINDOW = 100_000_000
FIELDS = ("model", "context_window", "reserve_output")


def model_settings_update(
    *, target: Workspace | Session | Thread, actor: Actor, model: Any = UNSET,
    context_window: Any = UNSET, reserve_output: Any = UNSET,
) -> Workspace | Session | Thread:
    """Set any of the three; null (or a blank model) inherits from the level above. Each
    one's shape (a name of at most 200 characters, a window of 1 to MAX_WINDOW tokens, a
    reserve of 0 to MAX_WINDOW) is the door's (api.model_settings.ModelSettingsInSerializer)."""
    changes = {k: v for k, v in (("model", model), ("context_window", context_window),
                                 ("reserve_output", reserve_output)) if v is not UNSET}
    window = changes.get("context_window", target.context_window)
    reserve = changes.get("reserve_output", target.reserve_output)
    if window is not None and reserve is not None and reserve >= window:
        # Both sent: the request contradicts itself. One of them stored: the request is sound
        # but conflicts with what is set (change the other one too).
        error = InvalidInput if {"context_window", "reserve_output"} <= set(changes) else Conflict
        raise error("reserve_output must be smaller than context_window.",
                    details={"reserve_output": "not below context_window"})
    with transaction.atomic():
        target = type(target).objects.select_for_update().get(pk=target.pk)
        before = {f: getattr(target, f) for f in FIELDS}
        for key, value in changes.items():
            setattr(target, key, value)
        target.save(update_fields=[*changes, *(["updated_at"] if hasattr(target, "updated_at") else [])])
        workspace = target if isinstance(target, Workspace) else target.workspace
        audit(actor=actor, action="model_settings.update", target=target, workspace=workspace,
              before=before, after={f: getattr(target, f) for f in FIELDS})
    return target
