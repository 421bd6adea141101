"""Shared reads. Each returns a queryset (or plain data) and reads only what it returns."""

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import DatabaseError, connection
from django.db.models import Q, QuerySet, Subquery

from contextstore.db import PreparedGet, regex_guard, statements_share_a_message
from contextstore.errors import InvalidInput
from contextstore.fields import text_to_stored
from contextstore.models import (
    ContextBlock,
    ContextBlockVersion,
    Event,
    Memory,
    ProviderState,
    Run,
    Session,
    SessionModel,
    StateRevision,
    Thread,
    Workspace,
)
from contextstore.usage import event_cost, event_usage

# Text search on a big thread asks the trigram index (event_content_trgm) first. Left to itself,
# the planner walks the thread's (thread, seq) index whenever its statistics predate the thread's
# rows (autovacuum off, a bulk load not yet analyzed): 100k rows filtered one by one for a rare
# word. The thread's own event_count says how big it is, so: on a thread of at least
# TEXT_INDEX_FIRST events, fetch the ids of all its matches through the index (the `+ 0` keeps
# the (thread, seq) index out of that query), under a short timeout; a rare word answers in
# milliseconds and the page is read by those ids. More than TEXT_INDEX_CAP matches (a common
# word) or the timeout: the ordinary query, whose walk ends after one page of common matches.
# Both read committed rows only (the GIN index, pending list included, is always current), so
# no committed event is ever missed.
TEXT_INDEX_FIRST = 10_000
TEXT_INDEX_CAP = 1_000
TEXT_INDEX_TIMEOUT_MS = 50
# One round trip: the timeout and the query go as one simple-protocol message (the client-side
# binding Django's psycopg backend uses by default), which PostgreSQL runs as one implicit
# transaction, so SET LOCAL ends with it. A BEGIN, SET LOCAL, query, COMMIT took four round
# trips, half the search's time on a busy machine. Like Django's icontains (same index).
_TEXT_MATCHES_SQL = (
    f"SET LOCAL statement_timeout = {TEXT_INDEX_TIMEOUT_MS}; "
    'SELECT "id" FROM "contextstore_event" '
    'WHERE UPPER("content") LIKE UPPER(%s) AND "thread_id" + 0 = %s LIMIT %s'
)


def _text_matches(thread: Thread, text: str) -> list[int] | None:
    """Ids of all the thread's events whose content contains `text`, or None: ask the ordinary
    query (SQLite, server-side binding, a small thread, inside another transaction, a common
    word)."""
    if (not statements_share_a_message() or thread.event_count < TEXT_INDEX_FIRST
            or not connection.get_autocommit()):  # in a transaction SET LOCAL would outlive this query
        return None
    pattern = f"%{connection.ops.prep_for_like_query(text_to_stored(text))}%"
    try:
        with connection.cursor() as cursor:
            cursor.execute(_TEXT_MATCHES_SQL, [pattern, thread.pk, TEXT_INDEX_CAP + 1])
            cursor.nextset()  # past the SET
            found = [pk for (pk,) in cursor.fetchall()]
    except DatabaseError:  # the timeout: a word too common for the index to pay
        return None
    return found if len(found) <= TEXT_INDEX_CAP else None


def thread_events(
    *, thread: Thread, types: Iterable[str] | None = None, text: str | None = None,
    regex: str | None = None, run_id: str | None = None, call_id: str | None = None,
    step: str | None = None, after_seq: int | None = None, before_seq: int | None = None,
    status: str | None = "active", visible: bool | None = None, limit: int | None = None,
    current_call: bool = False,
) -> QuerySet[Event]:
    """Events of a thread matching all the given filters, oldest first.

    `limit` keeps the most recent matches (Nooa's events.query); `status` is one status,
    "all", or None for all; `current_call` narrows to the call id of the newest event that has one.
    """
    found = _text_matches(thread, text) if text else None
    if found is not None:  # all the thread's matches, by id: no plan can walk the thread now
        qs = Event.objects.filter(pk__in=found).select_related("run")
    else:
        qs = Event.objects.filter(thread=thread).select_related("run")
        if text:
            qs = qs.filter(content__icontains=text)
    if status and status != "all":
        qs = qs.filter(status=status)
    if types:
        qs = qs.filter(type__in=list(types))
    if regex:
        qs = qs.filter(content__iregex=regex)
    if run_id:
        qs = qs.filter(run__run_id=run_id)
    if current_call:
        newest = (
            Event.objects.filter(thread=thread).exclude(call_id="").order_by("-seq")
            .values_list("call_id", flat=True).first()
        )
        qs = qs.filter(call_id=newest) if newest else qs.none()
    if call_id:
        qs = qs.filter(call_id=call_id)
    if step:
        qs = qs.filter(step=step)
    if after_seq is not None:
        qs = qs.filter(seq__gt=after_seq)
    if before_seq is not None:
        qs = qs.filter(seq__lt=before_seq)
    if visible is not None:
        qs = qs.filter(visible=visible)
    if limit is not None:
        newest_pks = qs.order_by("-seq").values("pk")[:limit]
        qs = Event.objects.filter(pk__in=Subquery(newest_pks)).select_related("run")
    return qs.order_by("seq")


def event_search(*, thread: Thread, first: int | None = None, **filters: Any) -> list[Event]:
    """Nooa's events.query over the database: AND of filters, chronological, limit keeps newest.

    `first` reads only the first n matches (one page of a keyset-paginated listing).

    Evaluates the query (inside a statement timeout when a regex is given) and turns a bad
    pattern or a timeout into a clear input error.
    """
    regex = filters.get("regex")
    if regex:
        try:
            re.compile(regex)
        except re.error as exc:
            raise InvalidInput(f"Invalid regular expression: {exc}", details={"regex": str(exc)}) from exc
    qs = thread_events(thread=thread, **filters)
    if first is not None:
        qs = qs[:first]
    if not regex:
        return list(qs)
    try:
        with regex_guard():
            return list(qs)
    except DatabaseError as exc:
        message = str(exc).lower()
        timed_out = isinstance(exc.__cause__, TimeoutError) or "user-defined function raised" in message
        if timed_out or "statement timeout" in message or "canceling statement" in message:
            raise InvalidInput("The regular expression took too long; narrow it down.",
                               code="regex_timeout", details={"regex": regex}) from exc
        raise InvalidInput(f"The database refused the regular expression: {exc}",
                           details={"regex": regex}) from exc


def working_context_tail(
    *, thread: Thread, max_tokens: int | None = None, count: int | None = None,
    strip_thinking: bool = False,
) -> list[Event]:
    """The newest model-visible active events, oldest first: the last `count`, or the longest
    run from the newest whose tokens fit `max_tokens`.

    Walks the partial (thread, position) index backward reading only (position, tokens), then
    loads just the events that fit, so the cost follows the budget, not the history.
    """
    qs = Event.objects.filter(thread=thread, status=Event.Status.ACTIVE, visible=True)
    if count is not None:
        return list(qs.order_by("-position")[: max(count, 0)])[::-1]
    budget = max(max_tokens or 0, 0)
    average = max(thread.active_tokens // max(thread.active_event_count, 1), 1)
    chunk = min(max(budget // average + 16, 32), 4096)
    used, newest, oldest, before = 0, None, None, None
    while True:
        page_qs = qs if before is None else qs.filter(position__lt=before)
        rows = list(page_qs.order_by("-position").values_list(
            "position", "token_count", "thinking_tokens")[:chunk])
        for position, tokens, thinking in rows:
            cost = tokens - (thinking if strip_thinking else 0)
            if used + cost > budget:
                rows = []  # stop: the window is contiguous from the newest event
                break
            used += cost
            newest = position if newest is None else newest
            oldest = position
        if len(rows) < chunk:
            break
        before = rows[-1][0]
        chunk = min(chunk * 4, 4096)
    if oldest is None:
        return []
    # Bounded above too, so events appended meanwhile cannot push the window over budget.
    return list(qs.filter(position__gte=oldest, position__lte=newest).order_by("position"))


def thread_blocks(*, thread: Thread) -> QuerySet[ContextBlock]:
    return ContextBlock.objects.filter(thread=thread).order_by("placement", "order", "name")


def block_versions(*, thread: Thread, name: str | None = None) -> QuerySet[ContextBlockVersion]:
    """Kept block versions, newest first; all names when name is None."""
    qs = ContextBlockVersion.objects.filter(thread=thread)
    if name is not None:
        qs = qs.filter(name=name)
    return qs.order_by("-id")


def workspace_sessions(
    *, workspace: Workspace, q: str | None = None, user_id: str | None = None,
    agent: str | None = None, archived: bool | None = None, model: str | None = None,
    errors: bool = False, cost: tuple[Decimal | None, Decimal | None] = (None, None),
    tokens: tuple[int | None, int | None] = (None, None),
    active: tuple[datetime | None, datetime | None] = (None, None),
) -> QuerySet[Session]:
    """The workspace's sessions, filtered on their columns and counters only (cost, tokens,
    errors, last activity; the model through SessionModel's (model, session) index), so a
    filter costs the same however long the sessions' histories are. Ranges include both
    ends; the activity range is [from, to)."""
    qs = Session.objects.filter(workspace=workspace)
    if q:
        qs = qs.filter(
            Q(key__icontains=q) | Q(user_id__icontains=q) | Q(agent__icontains=q) | Q(title__icontains=q)
        )
    if user_id is not None:
        qs = qs.filter(user_id=user_id)
    if agent:
        qs = qs.filter(agent=agent)
    if archived is not None:
        qs = qs.filter(archived=archived)
    if model:
        qs = qs.filter(pk__in=SessionModel.objects.filter(model=model).values("session_id"))
    if errors:
        qs = qs.filter(error_count__gt=0)
    for field, (low, high) in (("cost_total", cost), ("token_total", tokens)):
        if low is not None:
            qs = qs.filter(**{f"{field}__gte": low})
        if high is not None:
            qs = qs.filter(**{f"{field}__lte": high})
    if active[0] is not None:
        qs = qs.filter(last_activity_at__gte=active[0])
    if active[1] is not None:
        qs = qs.filter(last_activity_at__lt=active[1])
    return qs.order_by("-last_activity_at", "-id")


def workspace_models(*, workspace: Workspace, limit: int = 100) -> list[str]:
    """Model names the workspace's sessions used, for the model filter's choices."""
    return list(SessionModel.objects.filter(session__workspace=workspace).order_by("model")
                .values_list("model", flat=True).distinct()[:limit])


def session_threads(*, session: Session) -> QuerySet[Thread]:
    return Thread.objects.filter(session=session).select_related("parent").order_by("created_at", "id")


def provider_state(*, thread: Thread, provider: str) -> ProviderState | None:
    return ProviderState.objects.filter(thread=thread, provider=provider).first()


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


def thread_runs(*, thread: Thread) -> QuerySet[Run]:
    return Run.objects.filter(thread=thread).order_by("started_at", "id")


def thread_revisions(*, thread: Thread) -> QuerySet[StateRevision]:
    """A thread's revisions without their stored JSON (rebuild documents with
    selectors.document.revision_documents)."""
    return StateRevision.objects.filter(thread=thread).defer("document", "patch").order_by("revision")


def memory_recall(
    *, workspace: Workspace, user_id: str | None = None, q: str | None = None, limit: int = 20
) -> QuerySet[Memory]:
    qs = Memory.objects.filter(workspace=workspace)
    if user_id is not None:
        qs = qs.filter(user_id=user_id)
    if q:
        words = [w for w in q.split() if w]
        cond = Q()
        for word in words:
            cond |= Q(content__icontains=word) | Q(key__icontains=word)
        qs = qs.filter(cond)
    return qs.order_by("-updated_at", "-id")[:limit]




# ------------------------------------------------------------------ LLM calls
#
# A model call is logged as an LLMCallStart and, when it returns, an LLMComplete (usage, cost,
# finish reason). They are paired by key: the same call_id when the LLMComplete has one, else
# the same run, else (neither set) the nearest start before it in the thread. An LLMComplete
# pairs with the latest start before it with its key; a start pairs with the first
# LLMComplete after it with its key. Both searches look at a bounded number of LLM-call rows
# through the (thread, type, seq) index, so a pair costs the same in a thread of any length.

CALL_START = "LLMCallStart"
CALL_END = "LLMComplete"
PAIR_WINDOW = 20  # LLM-call rows looked at on either side to find a partner
SENT_PAGE = 100  # messages per page of an "as sent" view
DIFF_LIST = 50  # entered/left messages listed by a call diff


@dataclass
class LLMCall:
    """One model call: its LLMCallStart and its LLMComplete (either may be missing)."""

    start: Event | None
    end: Event | None

    @property
    def seq(self) -> int:
        """The seq that names the call in URLs: its start's, else its end's."""
        return (self.start or self.end).seq  # type: ignore[union-attr]

    def _data(self, key: str) -> Any:
        for event in (self.end, self.start):
            if event is not None and isinstance(event.data, dict) and event.data.get(key) is not None:
                return event.data[key]
        return None

    @property
    def model(self) -> str:
        return str(self._data("model") or "")

    @property
    def tokens(self) -> tuple[int, int]:
        return event_usage(self.end) if self.end else (0, 0)

    @property
    def cost(self) -> Decimal:
        return event_cost(self.end) if self.end else Decimal(0)

    @property
    def finish_reason(self) -> str:
        return str(self._data("finish_reason") or self._data("stop_reason") or "")

    @property
    def latency_ms(self) -> int | None:
        """From the start's to the end's time; else what the agent reported (latency_ms)."""
        if self.start and self.end:
            return int((self.end.occurred_at - self.start.occurred_at).total_seconds() * 1000)
        reported = self._data("latency_ms")
        return int(reported) if isinstance(reported, int | float) and not isinstance(reported, bool) else None

    @property
    def render_id(self) -> str | None:
        value = self._data("render_id")
        return str(value) if value else None

    @property
    def has_messages(self) -> bool:
        return isinstance(self._data("message_hashes"), list)

    @property
    def can_show_sent(self) -> bool:
        return bool(self.render_id) or self.has_messages


def call_key(event: Event) -> tuple[str, Any]:
    if event.call_id:
        return ("call", event.call_id)
    if event.run_id:
        return ("run", event.run_id)
    return ("thread", None)


def _key_filter(key: tuple[str, Any]) -> dict[str, Any]:
    return {"call": {"call_id": key[1]}, "run": {"run_id": key[1]}}.get(key[0], {})


def call_start_of(*, thread: Thread, end: Event) -> Event | None:
    """The LLMCallStart an LLMComplete closes (see the pairing rule above)."""
    key = call_key(end)
    for start in (Event.objects.filter(thread=thread, type=CALL_START, seq__lt=end.seq)
                  .select_related("run").order_by("-seq")[:PAIR_WINDOW]):
        if call_key(start) == key:
            return start
    return None


def call_end_of(*, thread: Thread, start: Event) -> Event | None:
    """The LLMComplete that closes an LLMCallStart, if it was logged."""
    key = call_key(start)
    for end in (Event.objects.filter(thread=thread, type=CALL_END, seq__gt=start.seq)
                .select_related("run").order_by("seq")[:PAIR_WINDOW]):
        if call_key(end) == key:
            return end
    return None


def calls_of_page(*, thread: Thread, events: list[Event]) -> tuple[dict[int, LLMCall], set[int]]:
    """Calls for a page of events (oldest first): {seq of the event that shows the card: call}
    and the seqs of starts folded into a card further down the same page. A card stands at its
    LLMComplete; a start whose end is not on the page gets a card of its own (still running,
    or ended on a newer page)."""
    calls: dict[int, LLMCall] = {}
    folded: set[int] = set()
    open_starts: dict[tuple[str, Any], Event] = {}
    for e in events:
        if e.type == CALL_START:
            open_starts[call_key(e)] = e
        elif e.type == CALL_END:
            start = open_starts.pop(call_key(e), None)
            if start is not None:
                folded.add(start.seq)
            else:
                start = call_start_of(thread=thread, end=e)
            calls[e.seq] = LLMCall(start=start, end=e)
    for start in open_starts.values():
        calls[start.seq] = LLMCall(start=start, end=call_end_of(thread=thread, start=start))
    return calls, folded


def llm_call_at(*, thread: Thread, seq: int) -> LLMCall | None:
    """The call whose LLMCallStart or LLMComplete is at `seq`."""
    event = (Event.objects.filter(thread=thread, seq=seq, type__in=(CALL_START, CALL_END))
             .select_related("run").first())
    if event is None:
        return None
    if event.type == CALL_START:
        return LLMCall(start=event, end=call_end_of(thread=thread, start=event))
    return LLMCall(start=call_start_of(thread=thread, end=event), end=event)


def llm_call_previous(*, thread: Thread, call: LLMCall) -> LLMCall | None:
    """The call logged before this one in the thread (any key)."""
    anchor = call.start or call.end
    kind = CALL_START if call.start else CALL_END
    prev = (Event.objects.filter(thread=thread, type=kind, seq__lt=anchor.seq)  # type: ignore[union-attr]
            .order_by("-seq").values_list("seq", flat=True).first())
    return llm_call_at(thread=thread, seq=prev) if prev is not None else None


def llm_call_sent(*, thread: Thread, call: LLMCall) -> dict[str, Any]:
    """What the call sent: its render record rebuilt, or the messages the agent logged.
    `source` is "render", "messages" or None (nothing was attached)."""
    from contextstore.models import RenderRecord
    from contextstore.selectors import renders

    if call.render_id:
        record = RenderRecord.objects.filter(thread=thread, pk=call.render_id).first() \
            if renders.is_uuid(call.render_id) else None
        if record is not None:
            body = renders.render_rebuild(record=record)
            return {"source": "render", "record": record, "format": body["format"],
                    "system": body.get("system") or [], "messages": body["messages"]}
    for event in (call.start, call.end):
        if event is not None:
            messages = renders.llm_call_messages(event=event)
            if messages is not None:
                return {"source": "messages", "record": None, "format": None, "system": [],
                        "messages": messages}
    return {"source": None, "record": None, "format": None, "system": [], "messages": []}


def _canonical(message: Any) -> str:
    return json.dumps(message, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _preview(message: Any) -> dict[str, Any]:
    if isinstance(message, dict):
        content = message.get("content", message.get("text", ""))
        role = str(message.get("role") or message.get("type") or "")
    else:
        content, role = message, ""
    text = content if isinstance(content, str) else _canonical(content)
    return {"role": role, "text": text[:300], "cut": len(text) > 300}


def llm_call_diff(*, thread: Thread, a: LLMCall, b: LLMCall) -> dict[str, Any]:
    """What changed from call `a` to call `b`: messages that entered and left, how long a
    prefix they share (a provider's prompt cache keeps only an unchanged prefix), and, when both
    sent a recorded render, the render diff (events by reason, blocks, summary, prefix hash)."""
    from contextstore.selectors import renders

    sent_a, sent_b = llm_call_sent(thread=thread, call=a), llm_call_sent(thread=thread, call=b)
    seq_a = [_canonical(m) for m in sent_a["system"]] + [_canonical(m) for m in sent_a["messages"]]
    seq_b = [_canonical(m) for m in sent_b["system"]] + [_canonical(m) for m in sent_b["messages"]]
    shared = 0
    for x, y in zip(seq_a, seq_b, strict=False):
        if x != y:
            break
        shared += 1
    all_a = sent_a["system"] + sent_a["messages"]
    all_b = sent_b["system"] + sent_b["messages"]
    in_a, in_b = set(seq_a), set(seq_b)
    entered = [(i, _preview(m)) for i, (m, c) in enumerate(zip(all_b, seq_b, strict=True)) if c not in in_a]
    left = [(i, _preview(m)) for i, (m, c) in enumerate(zip(all_a, seq_a, strict=True)) if c not in in_b]
    render = None
    if sent_a["record"] is not None and sent_b["record"] is not None:
        render = renders.render_diff(a=sent_a["record"], b=sent_b["record"])
    known = sent_a["source"] is not None and sent_b["source"] is not None
    return {
        "a": a, "b": b, "known": known, "count_a": len(seq_a), "count_b": len(seq_b),
        "shared_prefix": shared,
        # a cache keyed on the prompt's start survives when the first message(s) are unchanged
        "cache_kept": known and shared > 0 and (render is None or not render["prompt_cache_lost"]),
        "prefix_changed": known and (shared < len(seq_a) or bool(render and render["prefix_changed"])),
        "entered": entered[:DIFF_LIST], "entered_count": len(entered),
        "left": left[:DIFF_LIST], "left_count": len(left), "render": render,
    }


# ------------------------------------------------------------------ tool calls


def tool_pairs(*, events: list[Event]) -> tuple[dict[int, list[Event]], set[int]]:
    """ToolResults paired with the ToolCall they answer, within a page of events (oldest
    first): {ToolCall seq: its results} and the seqs of the results folded into a ToolCall's
    card. A result names its call by the tool-call id the call carries (parts or data, see
    toolcalls.py), else both share the event's call_id. A result whose call is on another
    page stays on its own."""
    from contextstore.toolcalls import event_calls, result_call_id

    by_tool_id: dict[str, Event] = {}
    by_call_id: dict[str, Event] = {}
    pairs: dict[int, list[Event]] = {}
    folded: set[int] = set()
    for e in events:
        if e.type == "ToolCall":
            for c in event_calls(e.type, e.parts, e.data):
                if c.id:
                    by_tool_id[c.id] = e
            if e.call_id:
                by_call_id[e.call_id] = e
            pairs[e.seq] = []
        elif e.type == "ToolResult":
            named = result_call_id(e.parts, e.data)
            call = (by_tool_id.get(named) if named else None) or by_call_id.get(e.call_id or named or "")
            if call is not None:
                pairs[call.seq].append(e)
                folded.add(e.seq)
    return {seq: results for seq, results in pairs.items() if results}, folded


def tool_name(event: Event) -> str:
    from contextstore.toolcalls import event_calls

    calls = event_calls(event.type, event.parts, event.data)
    if calls:
        return ", ".join(c.name for c in calls)
    data = event.data if isinstance(event.data, dict) else {}
    return str(data.get("tool") or data.get("name") or event.content[:60] or "tool")


# ------------------------------------------------------------------ navigation


def event_seq_at(*, thread: Thread, when: Any) -> int | None:
    """The first event at or after `when`, found by binary search over seq (about 17 point
    reads for 100k events, no index on time needed). Events are appended in time order; an
    agent that back-dates `occurred_at` lands the search near, not exactly on, its time."""
    lo, hi, found = 1, thread.last_seq, None
    while lo <= hi:
        mid = (lo + hi) // 2
        row = (Event.objects.filter(thread=thread, seq__gte=mid).order_by("seq")
               .values_list("seq", "occurred_at").first())
        if row is None:
            hi = mid - 1
        elif row[1] >= when:
            found, hi = row[0], mid - 1
        else:
            lo = row[0] + 1
    return found


def run_first_seq(*, thread: Thread, run_id: str) -> int | None:
    return (Event.objects.filter(thread=thread, run__run_id=run_id).order_by("seq")
            .values_list("seq", flat=True).first())


def error_seq(*, thread: Thread, after: int | None = None, before: int | None = None) -> int | None:
    """The next Error after seq `after`, or the previous one before seq `before`."""
    qs = Event.objects.filter(thread=thread, type="Error", status=Event.Status.ACTIVE)
    if after is not None:
        return qs.filter(seq__gt=after).order_by("seq").values_list("seq", flat=True).first()
    return qs.filter(seq__lt=before).order_by("-seq").values_list("seq", flat=True).first()


def actor_names(*, workspace: Workspace) -> dict[str, str]:
    """Readable names for the actor labels API tokens leave ("token:<prefix>"), so pages show
    who acted ("ingest-bot (API token)"), not a key prefix."""
    from contextstore.models import ApiToken

    tokens = ApiToken.objects.filter(workspace=workspace).only("name", "prefix").order_by("-pk")[:500]
    return {f"token:{t.prefix}": f"{t.name or 'unnamed'} (API token)" for t in tokens}


# ------------------------------------------------------------------ sessions

SESSION_SORTS = {"activity": "last_activity_at", "events": "event_count", "tokens": "token_total",
                 "cost": "cost_total", "errors": "error_count", "threads": "thread_count"}
LATENCY_THREADS = 20  # the session's most recent threads looked at for call latency
LATENCY_CALLS = 1000  # LLM-call events read per thread, newest first


def session_runs(*, session: Session, before: tuple[Any, int] | None = None,
                 size: int = 50) -> tuple[list[Run], tuple[Any, int] | None]:
    """A page of the session's runs, newest first, and the cursor of the next page."""
    qs = Run.objects.filter(thread__session=session).select_related("thread")
    if before is not None:
        when, pk = before
        qs = qs.filter(Q(started_at__lt=when) | Q(started_at=when, id__lt=pk))
    runs = list(qs.order_by("-started_at", "-id")[: size + 1])
    more = len(runs) > size
    runs = runs[:size]
    return runs, ((runs[-1].started_at, runs[-1].pk) if more else None)


def _percentile(values: list[int], p: float) -> int | None:
    if not values:
        return None
    ordered = sorted(values)  # nearest rank: the smallest value with p of them at or below it
    return ordered[min(len(ordered) - 1, max(math.ceil(p * len(ordered)) - 1, 0))]


def session_stats(*, session: Session) -> dict[str, Any]:
    """Turns (runs), and p50/p95 model-call latency over the newest calls of the session's
    newest threads (each read walks a thread's (thread, type, seq) index, bounded)."""
    latencies: list[int] = []
    threads = Thread.objects.filter(session=session).order_by("-last_event_at", "-id")[:LATENCY_THREADS]
    for thread in threads:
        events = list(Event.objects.filter(thread=thread, type__in=(CALL_START, CALL_END))
                      .order_by("-seq").only("seq", "type", "call_id", "run_id", "occurred_at")
                      [:LATENCY_CALLS])[::-1]
        open_starts: dict[tuple[str, Any], Event] = {}
        for e in events:
            if e.type == CALL_START:
                open_starts[call_key(e)] = e
            elif (start := open_starts.pop(call_key(e), None)) is not None:
                latencies.append(int((e.occurred_at - start.occurred_at).total_seconds() * 1000))
    return {"runs": Run.objects.filter(thread__session=session).count(), "calls": len(latencies),
            "p50": _percentile(latencies, 0.50), "p95": _percentile(latencies, 0.95)}
