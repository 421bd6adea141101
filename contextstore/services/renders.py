"""Render records: what one render gave a model, kept as references so it can be rebuilt
byte for byte and compared with another, after any later collapse, clear, block edit or restore
(the reads, rebuilding and diffing, are in selectors/renders.py).

A record copies no event text. Agents that build their own prompt attach it to LLMCallStart as
`data.messages`; each message is kept once in StoredText and the event holds only the hashes.
"""

import json
from dataclasses import replace
from typing import Any

from django.db import connection, transaction
from django.db.models import Q

from contextstore.errors import InvalidInput
from contextstore.models import ContextBlock, ContextBlockVersion, RenderRecord, StoredText, Thread
from contextstore.selectors import rendering
from contextstore.selectors.renders import LLM_CALL_TYPES, is_uuid, pack_events, sha256
from contextstore.services.common import Actor

SPEC_VERSION = 1
MAX_LOGGED_MESSAGES = 2000


def texts_keep(texts: list[str]) -> list[str]:
    """Keep each text once (content-addressed); returns their hashes in order."""
    hashes = [sha256(t) for t in texts]
    rows = {h: StoredText(sha256=h, text=t) for h, t in zip(hashes, texts, strict=True)}
    if rows:
        StoredText.objects.bulk_create(rows.values(), ignore_conflicts=True)
    return hashes


# ------------------------------------------------------------------ recording

def _version_ids(thread: Thread, shown: list[tuple[ContextBlock, str]]) -> dict[tuple[str, int], int]:
    """Version row ids for the blocks shown; a block made without one (an older fork or import)
    gets its version kept now, so the record can always name it."""
    if not shown:
        return {}
    cond = Q()
    for block, _ in shown:
        cond |= Q(name=block.name, version=block.version)
    found = {(v.name, v.version): v.pk for v in
             ContextBlockVersion.objects.filter(thread=thread).filter(cond).only("pk", "name", "version")}
    for block, _ in shown:
        if (block.name, block.version) not in found:
            kept, _ = ContextBlockVersion.objects.get_or_create(
                thread=thread, name=block.name, version=block.version,
                defaults={"value": block.value, "expr": block.expr, "placement": block.placement,
                          "order": block.order, "token_count": block.token_count,
                          "actor": "render record", "reason": "backfill"})
            found[(block.name, block.version)] = kept.pk
    return found


def render_record(*, thread: Thread, rendered: rendering.Rendered, actor: Actor) -> RenderRecord:
    """Keep what this render gave the model. Immutable once written."""
    shown = rendered.prefix.shown + rendered.suffix.shown
    expr_texts = [t for b, t in shown if b.expr is not None]
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # The commit's WAL flush is most of a record's cost. Without waiting for it the
            # record is still durable before anything that names it: the LLM-call event that
            # carries its render_id commits synchronously, and WAL is flushed in order. A crash
            # in the ~200 ms between could lose a record that nothing references yet.
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit = off")
        return _record(thread=thread, rendered=rendered, actor=actor, shown=shown,
                       expr_texts=expr_texts)


def _record(*, thread: Thread, rendered: rendering.Rendered, actor: Actor,
            shown: list[tuple[ContextBlock, str]], expr_texts: list[str]) -> RenderRecord:
    body = rendered.body
    stats = body["stats"]
    ids = _version_ids(thread, shown)
    texts_keep(expr_texts + ([rendered.summary] if rendered.summary else []))

    def blocks(section: rendering.Section) -> list[list[Any]]:
        return [[ids[(b.name, b.version)]] + ([sha256(t)] if b.expr is not None else [])
                for b, t in section.shown]

    sections = stats["sections"]
    spec = {
        "v": SPEC_VERSION,
        "strip": stats["strip_thinking"],
        "options": rendered.options,
        "prefix": blocks(rendered.prefix),
        "suffix": blocks(rendered.suffix),
        "summary": sha256(rendered.summary) if rendered.summary else None,
        "events": pack_events([i.event for unit in rendered.units for i in unit]),
        "tokens": {k: sections[k]["tokens"] for k in ("prefix", "summary", "history", "suffix")},
        "left_out": len(stats["skipped"]),
        "fits": stats["fits"],
    }
    return RenderRecord.objects.create(
        workspace_id=thread.workspace_id, thread=thread, format=body["format"],
        max_tokens=stats["max_tokens"], total_tokens=stats["total_tokens"],
        prefix_hash=stats["prefix_hash"], thread_revision=thread.revision, spec=spec,
        actor=actor.label[:200],
    )


# ------------------------------------------------------------------ LLM call links

def llm_call_prepare(*, thread: Thread, specs: list) -> tuple[list, list[str]]:
    """LLMCallStart/LLMComplete may name the render they sent (`data.render_id`, a render of
    this thread) and may carry the exact `data.messages` sent; those are replaced by their
    hashes (`data.message_hashes`); returns the specs and the message texts to keep."""
    out, refs, keep = [], [], []
    for index, spec in enumerate(specs):
        data = spec.data
        if spec.type not in LLM_CALL_TYPES or not isinstance(data, dict):
            out.append(spec)
            continue
        render_id = data.get("render_id")
        if render_id is not None:
            refs.append((index, render_id))
        messages = data.get("messages")
        if messages is not None:
            if not isinstance(messages, list) or len(messages) > MAX_LOGGED_MESSAGES:
                raise InvalidInput(f"events[{index}].data.messages must be a list of at most "
                                   f"{MAX_LOGGED_MESSAGES} messages.",
                                   details={f"events[{index}].data.messages": "invalid"})
            texts = [json.dumps(m, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
                     for m in messages]
            data = {k: v for k, v in data.items() if k != "messages"}
            data["message_hashes"] = [sha256(t) for t in texts]
            spec = replace(spec, data=data)
            keep.extend(texts)
        out.append(spec)
    if refs:
        known = {str(pk) for pk in RenderRecord.objects.filter(
            thread=thread, pk__in=[r for _, r in refs if is_uuid(r)]).values_list("pk", flat=True)}
        for index, render_id in refs:
            if not is_uuid(render_id) or str(render_id) not in known:
                raise InvalidInput(f"events[{index}].data.render_id is not a render of this thread.",
                                   details={f"events[{index}].data.render_id": "unknown render"})
    return out, keep
