"""A thread's activity log: who changed its history or state, as sentences with links to the
range or event they touched, from the AuditLog rows of the changes (not the admin's dict).

services.common.audit_row sets AuditLog.thread_id on the rows of ACTIONS only, so the log
reads one partial index (thread_id, -id) a page at a time: its cost does not grow with the
thread's history, appends and syncs never enter it.
"""

from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from contextstore.models import AuditLog, Thread
from contextstore.ranges import positive_int

PAGE = 50

ACTIONS = frozenset({
    "collapse.create", "collapse.undo", "thread.clear_context", "thread.unclear", "thread.fork",
    "thread.delete_fork", "thread.reset", "thread.reset_all", "state.patch", "state.write",
    "state.restore", "block.create", "block.update", "block.delete", "block.restore",
    "summary.request", "summary.cancelled", "summary.retried", "summary.failed",
    "thread.summarizer", "event.retract", "events.remove", "thread.import",
    "share.create", "share.revoke", "dataset.add",
})


@dataclass
class Activity:
    row: AuditLog
    who: str
    text: str  # the sentence after the actor's name; plain text, escaped by the template
    href: str | None = None
    link_text: str = ""


def _range(thread: Thread, d: dict[str, Any]) -> tuple[str | None, str]:
    start, end = d.get("start_position"), d.get("end_position")
    if isinstance(start, int) and isinstance(end, int):
        url = reverse("contextstore:thread", args=[thread.pk])
        return f"{url}?from={start}&to={end}&around={start}#e{start}", f"#{start}–#{end}"
    return None, ""


def _plural(n: Any, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def describe(row: AuditLog, thread: Thread) -> Activity:
    """One row as a sentence. Rows erased by services/erasure.py keep only their action."""
    d = row.details if isinstance(row.details, dict) else {}
    who = row.actor_label or row.get_actor_type_display()
    a = Activity(row=row, who=who, text=row.action)
    href, span = _range(thread, d)
    action = row.action
    if action == "collapse.create":
        a.text = (f"collapsed {_plural(d.get('events', '?'), 'event')} into a summary "
                  f"({d.get('tokens_before', '?')} → {d.get('tokens_after', '?')} tokens):")
        a.href, a.link_text = href, span
    elif action == "collapse.undo":
        a.text, a.href, a.link_text = "undid the collapse of", href, span
    elif action == "thread.clear_context":
        a.text = (f"cleared the context ({_plural(d.get('cleared', '?'), 'event')} out of what "
                  "the model sees)")
        a.href = reverse("contextstore:thread", args=[thread.pk]) + "?cleared=on"
        a.link_text = "show cleared events"
    elif action == "thread.unclear":
        a.text = f"un-cleared a clear ({_plural(d.get('restored', '?'), 'event')} back in context)"
    elif action == "thread.fork":
        a.text = f"forked {span or 'the working context'} into a new thread:"
        if (fork := positive_int(row.target_id)) is not None:
            a.href = reverse("contextstore:thread", args=[fork])
            a.link_text = f"thread {row.target_id}"
    elif action == "thread.delete_fork":
        a.text = f"deleted the fork “{d.get('name', '?')}” ({_plural(d.get('events', '?'), 'event')})"
    elif action in ("thread.reset", "thread.reset_all"):
        a.text = "reset the agent's state"
        if action == "thread.reset_all":
            a.text += " and its conversation history"
    elif action in ("state.patch", "state.write"):
        fields = d.get("fields") or []
        a.text = (f"edited the state ({', '.join(map(str, fields[:5]))}{'…' if len(fields) > 5 else ''}), "
                  f"revision {d.get('revision', '?')}")
    elif action == "state.restore":
        a.text = f"restored state revision {d.get('restored', '?')} (now revision {d.get('revision', '?')})"
    elif action.startswith("block."):
        verb = {"block.create": "created", "block.update": "edited", "block.delete": "deleted",
                "block.restore": "restored"}[action]
        extra = f" to version {d.get('restored_version')}" if action == "block.restore" else ""
        a.text = f"{verb} the block “{d.get('name', '?')}”{extra}"
    elif action == "summary.request":
        a.text, a.href, a.link_text = "asked the worker to summarize", href, span
    elif action == "summary.cancelled":
        a.text = "cancelled a summary job"
    elif action == "summary.retried":
        a.text = "retried a summary job"
    elif action == "summary.failed":
        a.text = f"could not summarize: {str(d.get('error', ''))[:200]}"
    elif action == "thread.summarizer":
        a.text = f"changed the summarizer to “{d.get('after', '')}”"
    elif action == "event.retract":
        seq = d.get("seq")
        a.text = "retracted event"
        if isinstance(seq, int):
            a.href = reverse("contextstore:thread", args=[thread.pk]) + f"?around={seq}#e{seq}"
            a.link_text = f"#{seq}"
    elif action == "events.remove":
        a.text = f"removed {_plural(d.get('count', '?'), 'event')} (framework sync)"
    elif action == "thread.import":
        a.text = f"imported {_plural(d.get('events', '?'), 'event')}"
    elif action in ("share.create", "share.revoke"):
        what = {"event": "event", "call": "LLM call"}.get(str(d.get("kind")), "the session")
        seq = d.get("seq")
        made = action == "share.create"
        a.text = f"{'made' if made else 'revoked'} a read-only share link ({d.get('prefix', '')}…) to {what}"
        if isinstance(seq, int):
            a.href = reverse("contextstore:thread", args=[thread.pk]) + f"?around={seq}#e{seq}"
            a.link_text = f"#{seq}"
    elif action == "dataset.add":
        a.text = f"added {'an LLM call' if d.get('kind') == 'call' else 'a range'} to a dataset:"
        if isinstance(d.get("dataset"), int):
            a.href = reverse("contextstore:dataset", args=[d["dataset"]])
            first = d.get("seq") or d.get("seq_from")
            last = d.get("seq_to")
            a.link_text = f"#{first}" + (f"–#{last}" if last and last != first else "")
    if d == {"erased": True}:
        a.text, a.href, a.link_text = f"{action} (details erased)", None, ""
    return a


def thread_activity(*, thread: Thread, before: int | None = None,
                    limit: int = PAGE) -> tuple[list[Activity], int | None]:
    """A page of the log, newest first, and the id to read the next page before (or None)."""
    rows = AuditLog.objects.filter(thread_id=thread.pk, workspace_id=thread.workspace_id)
    if before is not None:
        rows = rows.filter(id__lt=before)
    page = list(rows.order_by("-id")[: limit + 1])
    more = page[limit - 1].pk if len(page) > limit else None
    return [describe(row, thread) for row in page[:limit]], more
