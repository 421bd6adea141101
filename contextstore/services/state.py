"""Thread state: replace or JSON merge patch (RFC 7386) under an optional expected revision."""

import copy
from typing import Any

from django.db import transaction

from contextstore.errors import InvalidInput, NotFound, StaleRevision
from contextstore.models import StateRevision, Thread
from contextstore.services.common import UNSET, Actor, audit, lock_thread, record_revision


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null removes a member, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value)
    return result


def _check_expected(thread: Thread, expected_revision: int | None) -> None:
    if expected_revision is not None and expected_revision != thread.revision:
        raise StaleRevision(
            f"The state is at revision {thread.revision}, not {expected_revision}; "
            "read it again and retry.",
            details={"current_revision": thread.revision, "expected_revision": expected_revision},
        )


def check_memory(memory: Any) -> None:
    if not isinstance(memory, list) or not all(isinstance(m, dict) for m in memory):
        raise InvalidInput("memory must be a list of objects.", details={"memory": "list of objects"})


def state_write(
    *, thread: Thread, actor: Actor, state: Any = UNSET, memory: Any = UNSET,
    summary: Any = UNSET, merge: bool = False, expected_revision: int | None = None,
    reason: str = "",
) -> Thread:
    """Write state (and memory/summary). A stale expected_revision writes nothing."""
    if state is not UNSET and not merge and not isinstance(state, dict):
        raise InvalidInput("state must be a JSON object.", details={"state": "must be an object"})
    if memory is not UNSET:
        check_memory(memory)
    if summary is not UNSET and not isinstance(summary, str):
        raise InvalidInput("summary must be a string.", details={"summary": "must be a string"})
    if not isinstance(reason, str):
        raise InvalidInput("reason must be a string.", details={"reason": "must be a string"})
    with transaction.atomic():
        thread = lock_thread(thread)
        _check_expected(thread, expected_revision)
        fields = []
        if state is not UNSET:
            new_state = json_merge_patch(thread.state, state) if merge else state
            if not isinstance(new_state, dict):
                raise InvalidInput("The patched state must stay a JSON object.",
                                   details={"state": "must be an object"})
            thread.state = new_state
            fields.append("state")
        if memory is not UNSET:
            thread.memory = memory
            fields.append("memory")
        if summary is not UNSET:
            thread.summary = summary
            fields.append("summary")
        record_revision(thread=thread, reason=reason or ("patch" if merge else "write"),
                        actor=actor, fields=fields)
        audit(actor=actor, action="state.patch" if merge else "state.write", target=thread,
              workspace=thread.workspace, revision=thread.revision, fields=fields, reason=reason)
    return thread


def state_restore(
    *, thread: Thread, revision: int, actor: Actor, expected_revision: int | None = None
) -> Thread:
    """Write an earlier revision's state and memory again, as a new revision."""
    with transaction.atomic():
        thread = lock_thread(thread)
        _check_expected(thread, expected_revision)
        old = StateRevision.objects.filter(thread=thread, revision=revision).first()
        if old is None:
            raise NotFound(f"No revision {revision} on this thread.")
        thread.state, thread.memory = old.state, old.memory
        record_revision(thread=thread, reason=f"restore r{revision}", actor=actor,
                        fields=["state", "memory"])
        audit(actor=actor, action="state.restore", target=thread, workspace=thread.workspace,
              revision=thread.revision, restored=revision)
    return thread
