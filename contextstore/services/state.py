"""Thread state: replace or JSON merge patch (RFC 7386) under an optional expected revision.

The state, memory and summary are fields of the thread's document (services/document.py).
"""

from typing import Any

from django.db import transaction

from contextstore.models import Thread
from contextstore.services.common import UNSET, Actor, audit, lock_thread
from contextstore.services.document import check_expected, document_restore, document_write


def state_write(
    *, thread: Thread, actor: Actor, state: Any = UNSET, memory: Any = UNSET,
    summary: Any = UNSET, merge: bool = False, expected_revision: int | None = None,
    reason: str = "", savepoint: bool = True,
) -> Thread:
    """Write state (and memory/summary). A stale expected_revision writes nothing.

    With merge, state is an RFC 7386 merge patch of the current state (an object: the state
    must stay one). `savepoint=False`: the caller's transaction is the unit of work (a commit,
    which lets any error roll all of it back), so no savepoint is taken. The shapes (a state
    object, memory a list of objects, summary and reason strings) are the door's
    (api.serializers.StateWriteSerializer).
    """
    values = {name: value for name, value in
              (("state", state), ("memory", memory), ("summary", summary)) if value is not UNSET}
    patch = {}
    if merge and "state" in values:
        patch["state"] = values.pop("state")
    with transaction.atomic(savepoint=savepoint):
        thread = lock_thread(thread)
        check_expected(thread, expected_revision)
        document_write(thread=thread, actor=actor, reason=reason or ("patch" if merge else "write"),
                       values=values, merge=patch)
        audit(actor=actor, action="state.patch" if merge else "state.write", target=thread,
              workspace=thread.workspace, revision=thread.revision,
              fields=[*patch, *values], reason=reason)
    return thread


def state_restore(
    *, thread: Thread, revision: int, actor: Actor, expected_revision: int | None = None
) -> Thread:
    """Bring back an earlier revision's whole document (state, memory, summary, clientai
    fields, system prompt, tools, framework namespaces), as a new revision."""
    return document_restore(thread=thread, revision=revision, actor=actor,
                            expected_revision=expected_revision)
