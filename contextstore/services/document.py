"""Writes of the agent's document (Thread.document) and its revisions.

Every change to state, memory, summary, the clientai fields, the peteos slots or a framework
namespace goes through document_write, which bumps the thread's revision (the CAS token) and
stores a revision: RFC 6902 operations from the previous revision, plus a full snapshot every
SNAPSHOT_EVERY revisions or once the patches since the last snapshot outgrow the document.
Revision r is rebuilt from the nearest snapshot at or before r plus the patches after it, so
a restore brings back the whole document, byte for byte.
"""

from typing import Any

from django.db import transaction
from django.utils import timezone

from contextstore import documents
from contextstore.errors import InvalidInput, StaleRevision
from contextstore.fields import JSONText
from contextstore.models import StateRevision, Thread
from contextstore.redaction import redact, use_workspace
from contextstore.selectors.document import revision_document
from contextstore.services.common import Actor, audit, lock_thread

# A snapshot at least every this many revisions bounds the patches a rebuild applies; the
# other trigger (patches since the last snapshot outgrowing the document) bounds their bytes.
# 200 keeps a one-key write on a 1 MB document near 5 KB stored per revision, amortized.
SNAPSHOT_EVERY = 200


def check_expected(thread: Thread, revision: int | None, last_seq: int | None = None, *,
                   name: str = "expected_revision") -> None:
    """The one stale check of a conditional write (a state write, a framework save): the
    thread's revision and its history's last seq must be those the writer read (None: not
    checked). `name`: what the writer called its revision (sync's base_revision), in the
    details. The thread is the one read under its lock."""
    if revision is not None and revision != thread.revision:
        raise StaleRevision(
            f"The state is at revision {thread.revision}, not {revision}; read it again and retry.",
            details={"current_revision": thread.revision, name: revision},
        )
    if last_seq is not None and last_seq != thread.last_seq:
        raise StaleRevision(
            f"The history is at seq {thread.last_seq}, not {last_seq}; read it again and retry.",
            code="stale_history",
            details={"current_last_seq": thread.last_seq, "expected_last_seq": last_seq})


def is_stale(thread: Thread, revision: int | None, last_seq: int | None = None) -> bool:
    """Would check_expected refuse this write?"""
    return (revision is not None and revision != thread.revision
            or last_seq is not None and last_seq != thread.last_seq)


def _tail(thread: Thread) -> tuple[int, int]:
    """(base, chain_bytes) of the revision the thread stands at, writing it first if missing.

    A new thread (revision 0) has no row until its first write, which keeps the document it
    started from as a snapshot, so even the first operation can be undone.
    """
    tail = (StateRevision.objects.filter(thread=thread, revision=thread.revision)
            .values_list("base", "chain_bytes").first())
    if tail is None:
        text = documents.dumps(thread.document)
        StateRevision.objects.create(
            thread=thread, revision=thread.revision, document=text, base=thread.revision,
            size=len(text.encode()), reason="initial document",
        )
        tail = (thread.revision, 0)
    return tail


def revision_create(
    *, thread: Thread, ops: list[dict[str, Any]], document_text: str, tail: tuple[int, int],
    reason: str, actor: Actor,
) -> StateRevision:
    """Store revision thread.revision (already bumped) after `tail` (the previous revision's
    base and chain_bytes): the patch, and a snapshot when one is due.

    Its cost follows the patch (one insert), except on the revisions that take a snapshot.
    """
    base, chain = tail
    patch_text = documents.dumps(ops)
    patch_bytes = len(patch_text.encode())
    chain += patch_bytes
    snapshot = thread.revision - base >= SNAPSHOT_EVERY or chain > len(document_text)
    return StateRevision.objects.create(
        thread=thread, revision=thread.revision, patch=patch_text,
        document=document_text if snapshot else None,
        base=thread.revision if snapshot else base, chain_bytes=0 if snapshot else chain,
        size=patch_bytes + (len(document_text.encode()) if snapshot else 0),
        reason=reason[:500], actor=actor.label[:200],
    )


def document_write(
    *, thread: Thread, actor: Actor, reason: str, values: dict[str, Any] | None = None,
    merge: dict[str, dict[str, Any]] | None = None, thread_fields: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """Change the document of a thread locked by the caller (lock_thread, in its transaction)
    and record the revision. Returns the revision's RFC 6902 operations.

    values: document fields set to new values. merge: document fields (objects) changed by an
    RFC 7386 merge patch, whose revision is built from the patch alone. thread_fields: other
    Thread columns the caller changed, saved in the same UPDATE. Secrets in the new values
    and patches are redacted first (contextstore/redaction.py): every document write is here.
    """
    if values or merge:
        rules = use_workspace(thread.workspace)
        values, _ = redact(rules, values)
        merge, _ = redact(rules, merge)
    document = thread.document
    tail = _tail(thread)
    ops: list[dict[str, Any]] = []
    for name, patch in (merge or {}).items():
        ops.extend(documents.merge_patch_ops(document[name], patch, f"/{name}"))
        document[name] = documents.merge_patch(document[name], patch)
    for name, value in (values or {}).items():
        if name not in documents.DOCUMENT_FIELDS:
            raise KeyError(name)
        ops.extend(documents.field_ops(name, document.get(name, documents.MISSING), value))
        document[name] = value
    thread.revision += 1
    thread.updated_at = timezone.now()
    text = documents.dumps(document)
    revision_create(thread=thread, ops=ops, document_text=text, tail=tail, reason=reason,
                    actor=actor)
    Thread.objects.filter(pk=thread.pk).update(
        document=JSONText(text), revision=thread.revision, updated_at=thread.updated_at,
        **{f: getattr(thread, f) for f in thread_fields},
    )
    return ops


def document_restore(
    *, thread: Thread, revision: int, actor: Actor, expected_revision: int | None = None,
) -> Thread:
    """Make an earlier revision's whole document the current one, as a new revision."""
    with transaction.atomic():
        thread = lock_thread(thread)
        check_expected(thread, expected_revision)
        old = revision_document(thread=thread, revision=revision)
        if not isinstance(old, dict) or list(old) != list(documents.DOCUMENT_FIELDS):
            raise InvalidInput(f"Revision {revision} does not hold a whole document.")
        document_write(thread=thread, actor=actor, reason=f"restore r{revision}", values=old)
        audit(actor=actor, action="state.restore", target=thread, workspace=thread.workspace,
              revision=thread.revision, restored=revision)
    return thread
