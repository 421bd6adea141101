"""Reads of one thread's parts: the thread itself (the read of every API request on a thread),
its blocks and kept block versions, runs, provider states and revisions."""

import functools

from django.db.models import QuerySet

from contextstore.db import PreparedGet, PreparedRows
from contextstore.models import ContextBlock, ContextBlockVersion, ProviderState, Run, StateRevision, Thread

# The agent's document: JSON that can be large, and that history operations never read.
THREAD_STATE_FIELDS = ("document",)


def _thread_of_workspace(pk: int, workspace_id: int, *, history_only: bool,
                         with_session: bool) -> QuerySet[Thread]:
    qs = Thread.objects.filter(pk=pk, workspace_id=workspace_id)
    if with_session:  # (select_related() with no names would follow every relation)
        qs = qs.select_related("session")
    return qs.defer(*THREAD_STATE_FIELDS) if history_only else qs


_THREAD_OF_WORKSPACE = {
    (history_only, with_session): PreparedGet(functools.partial(
        _thread_of_workspace, history_only=history_only, with_session=with_session))
    for history_only in (False, True) for with_session in (False, True)
}
BIGINT_MAX = 2**63 - 1


def thread_of_workspace(*, workspace_id: int, pk: int, history_only: bool = False,
                        with_session: bool = True) -> Thread | None:
    """The thread `pk` of the workspace (its session with it), or None: the read of every API
    request on a thread, compiled once per process (db.PreparedGet). history_only leaves out
    the agent's document, which reading and appending history never touch; with_session=False
    leaves out the join to its session, for a caller that reads none of it (thread.session is
    then one more query)."""
    if not 0 < pk <= BIGINT_MAX:
        return None
    return _THREAD_OF_WORKSPACE[history_only, with_session].get(pk, workspace_id)


# What the API prints of a thread (api/serializers.thread_data reads rows in this order).
THREAD_DATA_FIELDS = (
    "id", "session_id", "session__key", "session__user_id", "name", "parent_id",
    "fork_start_position", "fork_end_position", "revision", "document", "summarizer", "last_seq",
    "event_count", "token_total", "active_event_count", "active_tokens", "last_event_at",
    "created_at", "updated_at",
)
_THREAD_DATA_OF_WORKSPACE = PreparedRows(lambda pk, workspace_id: (
    Thread.objects.filter(pk=pk, workspace_id=workspace_id).values_list(*THREAD_DATA_FIELDS)))


def thread_data_of_workspace(*, workspace_id: int, pk: int) -> tuple | None:
    """The thread `pk` of the workspace as one row of THREAD_DATA_FIELDS, or None: GET
    /threads/{id}/ in one statement compiled once per process, without building the model
    instances (a third of the read's Python)."""
    if not 0 < pk <= BIGINT_MAX:
        return None
    rows = _THREAD_DATA_OF_WORKSPACE.rows(pk, workspace_id)
    return rows[0] if rows else None


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
