"""Reads of one thread's parts: the thread itself (the read of every API request on a thread),
its blocks and kept block versions, runs, provider states and revisions."""

from django.db.models import QuerySet

from contextstore.db import PreparedGet
from contextstore.models import ContextBlock, ContextBlockVersion, ProviderState, Run, StateRevision, Thread

# The agent's document: JSON that can be large, and that history operations never read.
THREAD_STATE_FIELDS = ("document",)
_THREAD_OF_WORKSPACE = {
    history_only: PreparedGet(lambda pk, workspace_id, history_only=history_only: (
        Thread.objects.filter(pk=pk, workspace_id=workspace_id).select_related("session")
        .defer(*(THREAD_STATE_FIELDS if history_only else ()))))
    for history_only in (False, True)
}
BIGINT_MAX = 2**63 - 1


def thread_of_workspace(*, workspace_id: int, pk: int, history_only: bool = False) -> Thread | None:
    """The thread `pk` of the workspace (its session with it), or None: the read of every API
    request on a thread, compiled once per process (db.PreparedGet). history_only leaves out
    the agent's document, which reading and appending history never touch."""
    if not 0 < pk <= BIGINT_MAX:
        return None
    return _THREAD_OF_WORKSPACE[history_only].get(pk, workspace_id)


def thread_blocks(*, thread: Thread) -> QuerySet[ContextBlock]:
    return ContextBlock.objects.filter(thread=thread).order_by("placement", "order", "name")


def block_versions(*, thread: Thread, name: str | None = None) -> QuerySet[ContextBlockVersion]:
    """Kept block versions, newest first; all names when name is None."""
    qs = ContextBlockVersion.objects.filter(thread=thread)
    if name is not None:
        qs = qs.filter(name=name)
    return qs.order_by("-id")


def thread_runs(*, thread: Thread) -> QuerySet[Run]:
    return Run.objects.filter(thread=thread).order_by("started_at", "id")


def thread_revisions(*, thread: Thread) -> QuerySet[StateRevision]:
    """A thread's revisions without their stored JSON (rebuild documents with
    selectors.document.revision_documents)."""
    return StateRevision.objects.filter(thread=thread).defer("document", "patch").order_by("revision")


def provider_state(*, thread: Thread, provider: str) -> ProviderState | None:
    return ProviderState.objects.filter(thread=thread, provider=provider).first()
