"""Render records, read side: rebuilding what a recorded render gave a model, comparing two,
and the messages an LLM call logged (services/renders.py writes the records).

A record stores event ids and positions (the rows never change), block version ids (every
version is kept), and the sha256 of texts that can change or be evaluated (the summary, live
block expressions), whose text is kept once per distinct content in StoredText.
"""

import hashlib
import json
import uuid
from typing import Any

from django.db import connection
from django.db.models import F, QuerySet

from contextstore.errors import NotFound
from contextstore.models import Collapse, ContextBlockVersion, Event, RenderRecord, StoredText
from contextstore.render_format import HistoryEvent, build_counted, in_order, join_blocks, valid_items


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _texts(workspace_id: int, hashes: set[str]) -> dict[str, str]:
    """The texts of `hashes` this workspace stored (a hash names nothing outside it); a text
    that is gone (erased) is missing from the answer."""
    if not hashes:
        return {}
    return dict(StoredText.objects.filter(workspace_id=workspace_id, sha256__in=hashes)
                .values_list("sha256", "text"))


# ------------------------------------------------------------------ compact event lists

def pack_events(events: list[Event]) -> list[Any]:
    """Event (id, position) pairs as steps from the previous one: `n` is n events each one id
    and one position on (a bulk append); `[d]` one event d ids and d positions on (runtime
    events between); `[di, dp]` anything else (a summary: new id, old position). A 1k-event
    record takes a few bytes per event at most."""
    packed: list[Any] = []
    last_id, last_pos, run = 0, 0, 0
    for e in events:
        pk, position = e.pk, e.position
        di, dp = pk - last_id, position - last_pos
        if di == dp == 1:
            run += 1
        else:
            if run:
                packed.append(run)
                run = 0
            packed.append([di] if di == dp else [di, dp])
        last_id, last_pos = pk, position
    if run:
        packed.append(run)
    return packed


def unpack_events(packed: list[Any]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    last_id, last_pos = 0, 0
    for step in packed:
        if isinstance(step, int):
            for _ in range(step):
                last_id, last_pos = last_id + 1, last_pos + 1
                out.append((last_id, last_pos))
            continue
        di, dp = (step[0], step[0]) if len(step) == 1 else step
        last_id, last_pos = last_id + di, last_pos + dp
        out.append((last_id, last_pos))
    return out


# ------------------------------------------------------------------ rebuilding

def record_refs(record: RenderRecord) -> list[tuple[int, int]]:
    """The record's (event id, position) pairs, unpacked once per record instance."""
    refs = getattr(record, "_refs", None)
    if refs is None:
        # a memo on the instance: the stubs know only the model's fields
        refs = record._refs = unpack_events(record.spec["events"])  # type: ignore[attr-defined]
    return refs


def _named_events(thread_id: int, ids: list[int]) -> QuerySet[Event]:
    """The thread's events among `ids`, looked up by primary key. SQLite (never ANALYZEd, so
    without statistics) reads `thread_id = ? AND id IN (…)` along the (thread, seq) key, every
    event of the thread (60 ms at 50k events); with the thread's column inside an expression
    it looks the ids up by rowid. PostgreSQL keeps the plain equality: its pkey serves the ids
    either way, and a table partitioned by thread is pruned by it."""
    qs = Event.objects.filter(pk__in=ids)
    if connection.vendor == "sqlite":
        return qs.alias(of_thread=F("thread_id") + 0).filter(of_thread=thread_id)
    return qs.filter(thread_id=thread_id)


def record_events(record: RenderRecord) -> list[HistoryEvent]:
    """The record's events, the fields a render reads (a render of 200k tokens holds thousands
    of events: model instances would cost more than the query)."""
    refs = record_refs(record)
    rows = _named_events(record.thread_id, [i for i, _ in refs]).values_list(*HistoryEvent.__slots__)
    by_id = {row[0]: HistoryEvent(*row) for row in rows}
    return [by_id[i] for i, _ in refs if i in by_id]


def render_expired(record: RenderRecord) -> int:
    """How many of the events a record names are gone (deleted by retention): its rebuild
    leaves them out, and the pages and the API say so."""
    ids = [i for i, _ in record_refs(record)]
    return len(ids) - _named_events(record.thread_id, ids).count() if ids else 0


def _section_text(entries: list[list[Any]], versions: dict[int, ContextBlockVersion],
                  texts: dict[str, str]) -> str:
    named = []
    for entry in entries:
        version = versions[entry[0]]
        # a fixed value's block (one shown is never suppressed, so its value is a str)
        # a live block's text that is gone (erased) shows empty rather than failing the rebuild
        named.append((version.name, texts.get(entry[1], "") if len(entry) > 1 else version.value or ""))
    return join_blocks(named)


def render_rebuild(*, record: RenderRecord) -> dict[str, Any]:
    """The messages the recorded render gave, rebuilt from the rows it names."""
    return render_rebuild_counted(record=record)[0]


def render_rebuild_counted(*, record: RenderRecord) -> tuple[dict[str, Any], dict[str, list[int]]]:
    """render_rebuild, and each system block's and message's tokens as the render counted them
    (render_format.build_counted): they add up to the record's total less its tools."""
    spec = record.spec
    entries = spec["prefix"] + spec["suffix"]
    versions = {v.pk: v for v in ContextBlockVersion.objects.filter(
        thread_id=record.thread_id, pk__in=[e[0] for e in entries])}
    wanted = {e[1] for e in entries if len(e) > 1} | ({spec["summary"]} if spec["summary"] else set())
    texts = _texts(record.workspace_id, wanted)
    events = record_events(record)
    # Grouped as the render grouped them, in position order, then put back in the order the
    # record keeps: the order the render showed them (a peteos context's display order).
    shown = {e.pk: n for n, e in enumerate(events)}
    units, _ = valid_items(sorted(events, key=lambda e: e.position))
    units = in_order(units, lambda i: shown.get(i.event.pk))
    body, counts = build_counted(
        fmt=record.format, prefix=_section_text(spec["prefix"], versions, texts),
        summary=texts.get(spec["summary"], "") if spec["summary"] else "",
        suffix=_section_text(spec["suffix"], versions, texts), units=units,
        strip_thinking=spec["strip"], summary_as_user=spec["v"] >= 2)  # as its render showed it
    return {"format": record.format, **body}, counts


def render_get(*, workspace_id: int, render_id: Any) -> RenderRecord:
    if not is_uuid(render_id):
        raise NotFound("No such render.")
    record = RenderRecord.objects.filter(workspace_id=workspace_id, pk=render_id).select_related(
        "thread").first()
    if record is None:
        raise NotFound("No such render.")
    return record


# ------------------------------------------------------------------ LLM call links

def texts_of(*, workspace_id: int, hashes: set[str]) -> dict[str, str]:
    """{hash: text} of the hashes this workspace stored (the others are left out)."""
    return _texts(workspace_id, hashes)


def llm_call_logged(*, event: Event, workspace_id: int) -> tuple[list[Any] | None, int]:
    """The messages an LLMCallStart logged, back from their hashes within the call's workspace
    (None when none were), and how many are gone: a message whose text was erased (or that an
    older event named without storing it) is left out and counted, never an error."""
    hashes = (event.data or {}).get("message_hashes") if isinstance(event.data, dict) else None
    if not isinstance(hashes, list):
        return None, 0
    texts = _texts(workspace_id, {h for h in hashes if isinstance(h, str)})
    found = [json.loads(texts[h]) for h in hashes if isinstance(h, str) and h in texts]
    return found, len(hashes) - len(found)


def llm_call_messages(*, event: Event, workspace_id: int) -> list[Any] | None:
    """The messages an LLMCallStart logged that are still there (llm_call_logged)."""
    return llm_call_logged(event=event, workspace_id=workspace_id)[0]


def render_tools(*, workspace_id: int, tools_hash: str | None) -> list[Any]:
    """The tool list a render is asked to count (the API's `tools_hash`): one this workspace
    stored, as a logged call's `data.tools` is kept; a name it did not store is not found (404),
    as another workspace's is."""
    if tools_hash is None:
        return []
    text = _texts(workspace_id, {tools_hash}).get(tools_hash)
    tools = json.loads(text) if text is not None else None
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise NotFound("tools_hash names no tool list this workspace stored: log a call with "
                       "data.tools first (the server keeps it by this hash).",
                       details={"tools_hash": "unknown tool list"})
    return tools


def llm_call_request(*, event: Event, workspace_id: int) -> dict[str, Any]:
    """The rest of the request an LLM-call event logged: {"tools": [...] | None, "params": {...}}."""
    data = event.data if isinstance(event.data, dict) else {}
    tools_hash = data.get("tools_hash")
    tools = None
    if isinstance(tools_hash, str):
        text = _texts(workspace_id, {tools_hash}).get(tools_hash)
        tools = json.loads(text) if text is not None else None
    params = data.get("params")
    return {"tools": tools, "params": params if isinstance(params, dict) else {}}


def is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return isinstance(value, str)


# ------------------------------------------------------------------ diff

def _ranges(positions: list[int], within: list[int]) -> list[list[int]]:
    """[first, last] position ranges, joining positions that are neighbours in `within` (the
    render's own events), so runtime events between them do not split a range."""
    order = {p: i for i, p in enumerate(sorted(within))}
    out: list[list[int]] = []
    for p in sorted(positions):
        if out and order[p] == order[out[-1][1]] + 1:
            out[-1][1] = p
        else:
            out.append([p, p])
    return out


def _blocks(record: RenderRecord, versions: dict[int, ContextBlockVersion]) -> dict[str, dict]:
    out = {}
    for section in ("prefix", "suffix"):
        for entry in record.spec[section]:
            v = versions[entry[0]]
            out[v.name] = {"section": section, "version": v.version, "version_id": v.pk,
                           "text_sha256": entry[1] if len(entry) > 1 else None}
    return out


def render_diff(*, a: RenderRecord, b: RenderRecord) -> dict[str, Any]:
    """What changed between two recorded renders (of one thread, or a fork and its parent):
    events added and removed (and why: collapsed, cleared, or no longer fitting), blocks
    changed, summary and prefix blocks changed, tokens per section before and after."""
    refs_a, refs_b = dict(record_refs(a)), dict(record_refs(b))
    added = sorted(refs_b[i] for i in set(refs_b) - set(refs_a))
    removed_ids = set(refs_a) - set(refs_b)
    now = {pk: (status, collapse) for pk, status, collapse in Event.objects.filter(
        pk__in=removed_ids).values_list("pk", "status", "collapse_id")}
    why: dict[str, list[int]] = {}
    collapses: set[int] = set()
    # ranges are of positions of events the render held; runtime events between them never
    # reach a render, so a gap of those does not split a range
    for pk in removed_ids:
        status, collapse = now.get(pk, ("deleted", None))
        reason = {"collapsed": "collapsed", "cleared": "cleared", "active": "left_out"}.get(status, status)
        why.setdefault(reason, []).append(refs_a[pk])
        if collapse:
            collapses.add(collapse)
    entries = [e[0] for r in (a, b) for s in ("prefix", "suffix") for e in r.spec[s]]
    versions = {v.pk: v for v in ContextBlockVersion.objects.filter(pk__in=entries)}
    blocks_a, blocks_b = _blocks(a, versions), _blocks(b, versions)
    blocks = []
    for name in sorted(set(blocks_a) | set(blocks_b)):
        before, after = blocks_a.get(name), blocks_b.get(name)
        if before == after:
            continue
        change = "added" if before is None else "removed" if after is None else "changed"
        blocks.append({"name": name, "change": change,
                       "version_before": before and before["version"],
                       "version_after": after and after["version"]})
    # records made before renders counted tools have none
    tokens = {k: {"before": a.spec["tokens"].get(k, 0), "after": b.spec["tokens"].get(k, 0)}
              for k in ("tools", "prefix", "summary", "history", "suffix")}
    tokens["total"] = {"before": a.total_tokens, "after": b.total_tokens}
    return {
        "a": str(a.pk), "b": str(b.pk),
        "events_added": {"count": len(added), "ranges": _ranges(added, list(refs_b.values()))},
        "events_removed": {
            "count": len(removed_ids),
            "by_reason": {reason: {"count": len(ps), "ranges": _ranges(ps, list(refs_a.values()))}
                          for reason, ps in sorted(why.items())},
            "collapses": [{"id": c.pk, "start_position": c.start_position, "end_position": c.end_position,
                           "undone": c.undone_at is not None}
                          for c in Collapse.objects.filter(pk__in=collapses).order_by("pk")],
        },
        "blocks_changed": blocks,
        "summary_changed": a.spec["summary"] != b.spec["summary"],
        # the prefix blocks alone; what a provider's cache keeps is selectors/cache.records_compare
        "prefix_changed": a.prefix_hash != b.prefix_hash,
        "format_changed": a.format != b.format,
        "tokens": tokens,
    }
