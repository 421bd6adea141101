"""Render records: what one render gave a model, kept as references so it can be rebuilt
byte for byte and compared with another, after any later collapse, clear, block edit or restore
(the reads, rebuilding and diffing, are in selectors/renders.py).

A record copies no event text. Agents that build their own prompt attach it to LLMCallStart as
`data.messages`; each message is kept once in StoredText and the event holds only the hashes.
"""

import json
from dataclasses import replace
from typing import Any

from django.db import connection
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
    # The render read each block's version id with the block (version_pk); a block from
    # elsewhere is looked up.
    found = {(b.name, b.version): b.version_pk for b, _ in shown if getattr(b, "version_pk", None)}
    missing = [b for b, _ in shown if (b.name, b.version) not in found]
    if not missing:
        return found
    cond = Q()
    for block in missing:
        cond |= Q(name=block.name, version=block.version)
    found.update({(v.name, v.version): v.pk for v in ContextBlockVersion.objects.filter(
        thread=thread).filter(cond).only("pk", "name", "version")})
    for block, _ in shown:
        if (block.name, block.version) not in found:
            kept, _ = ContextBlockVersion.objects.get_or_create(
                thread=thread, name=block.name, version=block.version,
                defaults={"value": block.value, "expr": block.expr, "placement": block.placement,
                          "order": block.order, "token_count": block.token_count,
                          "actor": "render record", "reason": "backfill"})
            found[(block.name, block.version)] = kept.pk
    return found


def _insert(record: RenderRecord) -> RenderRecord:
    """INSERT the record in one statement. On PostgreSQL the statement also turns off waiting
    for its commit's WAL flush, which is most of a record's cost: the record is still durable
    before anything that names it, since the LLM-call event that carries its render_id commits
    synchronously and WAL is flushed in order (a crash in the ~200 ms between could lose a
    record nothing references yet). One statement, not BEGIN / SET LOCAL / INSERT / COMMIT:
    under load each round trip costs about what the insert itself does."""
    fields = RenderRecord._meta.concrete_fields
    values = [f.get_db_prep_save(f.pre_save(record, True), connection) for f in fields]
    quote = connection.ops.quote_name
    sql = (f"INSERT INTO {quote(RenderRecord._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
           f"SELECT {', '.join(['%s'] * len(fields))}")
    if connection.vendor == "postgresql":
        # set_config(..., true) is SET LOCAL: it ends with this statement's transaction.
        sql += " WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL"
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
    record._state.adding, record._state.db = False, connection.alias
    return record


def render_record(*, thread: Thread, rendered: rendering.Rendered, actor: Actor) -> RenderRecord:
    """Keep what this render gave the model. Immutable once written.

    One statement, the INSERT; with a summary or live blocks, one more keeps their texts.
    Nothing the render loaded is read again (block version ids came with the blocks), and
    each text is hashed once.
    """
    shown = rendered.prefix.shown + rendered.suffix.shown
    texts = [t for b, t in shown if b.expr is not None] + ([rendered.summary] if rendered.summary else [])
    # Kept before the record and outside its statement: a text is immutable and content-addressed,
    # so one kept for a record that then fails harms nothing, and a text already kept (the usual
    # case: the summary changes seldom) writes nothing and commits nothing.
    hashes = texts_keep(texts)
    return _record(thread=thread, rendered=rendered, actor=actor, shown=shown, hashes=hashes)


def _record(*, thread: Thread, rendered: rendering.Rendered, actor: Actor,
            shown: list[tuple[ContextBlock, str]], hashes: list[str]) -> RenderRecord:
    body = rendered.body
    stats = body["stats"]
    ids = _version_ids(thread, shown)
    # the hashes of the live blocks' texts, in the order shown, then the summary's
    live = iter(hashes)

    def blocks(section: rendering.Section) -> list[list[Any]]:
        return [[ids[(b.name, b.version)]] + ([next(live)] if b.expr is not None else [])
                for b, _ in section.shown]

    sections = stats["sections"]
    spec = {
        "v": SPEC_VERSION,
        "strip": stats["strip_thinking"],
        "options": rendered.options,
        "prefix": blocks(rendered.prefix),
        "suffix": blocks(rendered.suffix),
        "summary": next(live) if rendered.summary else None,
        "events": pack_events([i.event for unit in rendered.units for i in unit]),
        "tokens": {k: sections[k]["tokens"] for k in ("prefix", "summary", "history", "suffix")},
        "left_out": len(stats["skipped"]),
        "fits": stats["fits"],
    }
    return _insert(RenderRecord(
        workspace_id=thread.workspace_id, thread=thread, format=body["format"],
        max_tokens=stats["max_tokens"], total_tokens=stats["total_tokens"],
        prefix_hash=stats["prefix_hash"], thread_revision=thread.revision, spec=spec,
        actor=actor.label[:200],
    ))


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
