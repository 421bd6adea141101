"""Reads of the agent's document revisions (services/document.py writes them): revision r is
rebuilt from the nearest snapshot at or before r plus the RFC 6902 patches after it."""

import json
from typing import Any

from contextstore import documents
from contextstore.errors import NotFound
from contextstore.models import StateRevision, Thread


def _rows(thread: Thread, revision: int):
    base = (StateRevision.objects.filter(thread=thread, revision=revision)
            .values_list("base", flat=True).first())
    if base is None:
        raise NotFound(f"No revision {revision} on this thread.", details={"revision": revision})
    return (StateRevision.objects.filter(thread=thread, revision__gte=base, revision__lte=revision)
            .order_by("revision"))


def revision_document(*, thread: Thread, revision: int) -> dict[str, Any]:
    """The whole document as it stood at a revision: its snapshot plus the patches after it."""
    document: Any = None
    for text, patch in _rows(thread, revision).values_list("document", "patch"):
        if document is None or patch is None:  # the snapshot, or one with no patch (migrated)
            document = json.loads(text)
        else:
            document = documents.apply_ops(document, json.loads(patch))
    return document


def revision_documents(*, thread: Thread, revisions: list[int]) -> dict[int, dict[str, Any]]:
    """Documents at several revisions (a page of the list), rebuilt in one forward pass."""
    if not revisions:
        return {}
    low, high = min(revisions), max(revisions)
    start = (StateRevision.objects.filter(thread=thread, revision=low)
             .values_list("base", flat=True).first())
    if start is None:
        raise NotFound(f"No revision {low} on this thread.")
    wanted, found, document = set(revisions), {}, None
    for number, text, patch in (StateRevision.objects
                                .filter(thread=thread, revision__gte=start, revision__lte=high)
                                .order_by("revision").values_list("revision", "document", "patch")
                                .iterator(chunk_size=200)):
        if document is None or patch is None:  # the starting snapshot, or one without a patch
            assert text is not None  # such a revision keeps its whole document
            document = json.loads(text)
        else:
            document = documents.apply_ops(document, json.loads(patch))
        if number in wanted:
            found[number] = json.loads(documents.dumps(document))
    return found


def revision_diff(*, thread: Thread, revision: int) -> list[dict[str, Any]]:
    """RFC 6902 operations from the previous revision to this one (empty for the first)."""
    row = StateRevision.objects.filter(thread=thread, revision=revision).values_list(
        "patch", flat=True).first()
    if row is not None:
        return json.loads(row)
    if not StateRevision.objects.filter(thread=thread, revision=revision).exists():
        raise NotFound(f"No revision {revision} on this thread.", details={"revision": revision})
    if not StateRevision.objects.filter(thread=thread, revision=revision - 1).exists():
        return []
    return documents.document_ops(revision_document(thread=thread, revision=revision - 1),
                                  revision_document(thread=thread, revision=revision))
