"""Render records: what one render gave a model, kept as references so it can be rebuilt
byte for byte and compared with another, after any later collapse, clear, block edit or restore
(the reads, rebuilding and diffing, are in selectors/renders.py).

A record copies no event text. Agents that build their own prompt attach it to LLMCallStart as
`data.messages`; each message is kept once in StoredText and the event holds only the hashes.
"""

import json
import uuid
from dataclasses import replace
from itertools import batched
from typing import Any

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from contextstore.db import insert_sql, run_along
from contextstore.errors import InvalidInput
from contextstore.eventspec import LLM_CALL_TYPES
from contextstore.models import ContextBlock, ContextBlockVersion, RenderRecord, StoredText, Thread
from contextstore.selectors import rendering
from contextstore.selectors.renders import is_uuid, pack_events, sha256
from contextstore.services.common import Actor

# 2: openai renders show a collapse's summary as a user message (render_format.build_messages)
SPEC_VERSION = 2


def _text_rows(workspace_id: int, hashes: list[str], texts: list[str]) -> list[StoredText]:
    """One row per distinct text."""
    return list({h: StoredText(workspace_id=workspace_id, sha256=h, text=t)
                 for h, t in zip(hashes, texts, strict=True)}.values())


def texts_keep(*, workspace_id: int, texts: list[str]) -> list[str]:
    """Keep each text once in its workspace (content-addressed); returns their hashes in order."""
    hashes = [sha256(t) for t in texts]
    rows = _text_rows(workspace_id, hashes, texts)
    if rows:
        StoredText.objects.bulk_create(rows, ignore_conflicts=True)
    return hashes


# ------------------------------------------------------------------ recording

def _version_ids(thread: Thread, shown: list[tuple[ContextBlock, str]]) -> dict[tuple[str, int], int]:
    """Version row ids for the blocks shown; a block made without one (an older fork or import)
    gets its version kept now, so the record can always name it."""
    # The render read each block's version id with the block (version_pk); a block from
    # elsewhere is looked up.
    found = {(b.name, b.version): pk for b, _ in shown if (pk := getattr(b, "version_pk", None))}
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


_INSERT_SQL: dict[str, str] = {}  # per database vendor
_SPEC_FIELD = RenderRecord._meta.get_field("spec")
_ACTOR_FIELD = RenderRecord._meta.get_field("actor")


def _insert_statement(values: list[Any]) -> tuple[str, list[Any]]:
    """The INSERT of a record, its column values in field order. On PostgreSQL the statement
    also turns off waiting for its commit's WAL flush, which is most of a record's cost: the
    record is still durable before anything that names it, since the LLM-call event that
    carries its render_id commits synchronously and WAL is flushed in order (a crash in the
    ~200 ms between could lose a record nothing references yet). The values are prepared here
    rather than through a model instance's save: a record is taken on every context request,
    and Django's per-field preparation cost more than the INSERT's own work in the database."""
    sql = _INSERT_SQL.get(connection.vendor)
    if sql is None:
        quote = connection.ops.quote_name
        # a concrete field has a column (the stubs say str | None for every field)
        columns = ", ".join(quote(f.column) for f in RenderRecord._meta.concrete_fields)  # type: ignore[arg-type]
        marks = ", ".join(["%s"] * len(values))
        sql = f"INSERT INTO {quote(RenderRecord._meta.db_table)} ({columns}) SELECT {marks}"
        if connection.vendor == "postgresql":
            # set_config(..., true) is SET LOCAL: it ends with this statement's transaction.
            sql += " WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL"
        _INSERT_SQL[connection.vendor] = sql
    # id, ..., spec, actor, created_at: the model's field order (a test reads the row back)
    record_id, *middle, spec, actor, created_at = values
    return sql, [record_id if connection.features.has_native_uuid_field else record_id.hex, *middle,
                 # as every write: through the fields' storage boundary (secrets redacted)
                 _SPEC_FIELD.get_db_prep_save(spec, connection),
                 _ACTOR_FIELD.get_db_prep_save(actor, connection),
                 connection.ops.adapt_datetimefield_value(created_at)]


def _texts_statement(workspace_id: int, hashes: list[str], texts: list[str]) -> tuple[str, list[Any]]:
    """PostgreSQL: texts_keep's INSERT of the texts not kept yet, as a statement to run with a read."""
    sql, params = insert_sql(StoredText, _text_rows(workspace_id, hashes, texts), ignore_conflicts=True)
    return sql, list(params)


def _values(*, thread: Thread, actor: Actor, fmt: str, max_tokens: int, total: int,
            prefix_hash: str, spec: dict[str, Any]) -> list[Any]:
    """A record's columns in the model's field order (RenderRecord.from_db builds from them)."""
    return [uuid.uuid4(), thread.workspace_id, thread.pk, fmt, max_tokens, total, prefix_hash,
            thread.revision, spec, actor.label[:200], timezone.now()]


def _spec(*, stats: dict[str, Any], options: dict[str, Any], prefix: rendering.Section,
          suffix: rendering.Section, summary: str, ids: dict[tuple[str, int], int],
          hashes: list[str], events: list[Any]) -> dict[str, Any]:
    """The record's spec: the render's `stats` (render_stats) and the rows it names."""
    # the hashes of the live blocks' texts, in the order shown, then the summary's
    live = iter(hashes)

    def blocks(section: rendering.Section) -> list[list[Any]]:
        return [[ids[(b.name, b.version)]] + ([next(live)] if b.expr is not None else [])
                for b, _ in section.shown]

    sections = stats["sections"]
    return {"v": SPEC_VERSION, "strip": stats["strip_thinking"], "options": options,
            "prefix": blocks(prefix), "suffix": blocks(suffix),
            "summary": next(live) if summary else None, "events": pack_events(events),
            "tokens": {k: sections[k]["tokens"] for k in ("tools", "prefix", "summary", "history", "suffix")},
            "left_out": len(stats["skipped"]), "fits": stats["fits"]}


def _texts(shown: list[tuple[ContextBlock, str]], summary: str) -> list[str]:
    """The texts a record keeps by hash: the live blocks' shown, in order, then the summary."""
    return [t for b, t in shown if b.expr is not None] + ([summary] if summary else [])


def _spec_of(rendered: rendering.Rendered, ids: dict[tuple[str, int], int],
             hashes: list[str]) -> dict[str, Any]:
    return _spec(stats=rendered.body["stats"], options=rendered.options, prefix=rendered.prefix,
                 suffix=rendered.suffix, summary=rendered.summary, ids=ids, hashes=hashes,
                 events=[i.event for unit in rendered.units for i in unit])


def render_record(*, thread: Thread, rendered: rendering.Rendered, actor: Actor) -> RenderRecord:
    """Keep what this render gave the model. Immutable once written.

    One statement, the INSERT; with a summary or live blocks, one more keeps their texts.
    Nothing the render loaded is read again (block version ids came with the blocks), and
    each text is hashed once.
    """
    shown = rendered.prefix.shown + rendered.suffix.shown
    # Kept before the record and outside its statement: a text is immutable and content-addressed,
    # so one kept for a record that then fails harms nothing, and a text already kept (the usual
    # case: the summary changes seldom) writes nothing and commits nothing.
    hashes = texts_keep(workspace_id=thread.workspace_id, texts=_texts(shown, rendered.summary))
    stats = rendered.body["stats"]
    values = _values(thread=thread, actor=actor, fmt=rendered.body["format"],
                     max_tokens=stats["max_tokens"], total=stats["total_tokens"],
                     prefix_hash=stats["prefix_hash"],
                     spec=_spec_of(rendered, _version_ids(thread, shown), hashes))
    with connection.cursor() as cursor:
        cursor.execute(*_insert_statement(values))
    # Every concrete field's value, in order: Django needs no names then (the stub wants them).
    return RenderRecord.from_db(connection.alias, None, values)  # type: ignore[arg-type]


def context_render_recorded(
    *, thread: Thread, max_tokens: int, actor: Actor, strip_thinking: bool = False,
    fmt: str = "raw", on_oversize: str = "skip", start_chunk: float | None = None,
    tools: list[Any] | None = None,
) -> tuple[rendering.Rendered, RenderRecord]:
    """Render and keep the record of it, for the price of the render alone where possible.

    On PostgreSQL the record (and any text it names not kept yet) is written by the render's
    own last statement, the read of the planned events (`WITH … AS (INSERT …) SELECT …`, run
    here: rendering.window_statement gives the read, render_finish takes its rows): a record
    then costs no round trip. It is written as the plan predicts; if the render then
    shows less (an event invalid for the provider, or one collapsed between the plan and the
    read), the record is corrected before anyone has its id. Elsewhere, and for a plan that
    reads no events or skips some inside its window, the record is written after the render.
    """
    planned = rendering.render_plan(thread=thread, max_tokens=max_tokens,
                                    strip_thinking=strip_thinking, fmt=fmt, on_oversize=on_oversize,
                                    start_chunk=start_chunk, tools=tools or ())
    plan = planned.plan
    if connection.vendor != "postgresql" or not plan.units or rendering.skipped_inside(plan):
        rendered = rendering.render_finish(planned)
        return rendered, render_record(thread=thread, rendered=rendered, actor=actor)
    shown = planned.prefix.shown + planned.suffix.shown
    texts = _texts(shown, thread.summary)
    hashes = [sha256(t) for t in texts]
    ids = _version_ids(thread, shown)
    rows = sorted((r for unit in plan.units for r in unit), key=lambda r: r.position)
    # The stats the render will answer if it shows the planned events (checked below).
    stats = rendering.render_stats(planned, used=sum(r.cost for r in rows), included=len(rows),
                                   invalid=[])
    spec = _spec(stats=stats, options=planned.options, prefix=planned.prefix, suffix=planned.suffix,
                 summary=thread.summary, ids=ids, hashes=hashes, events=rows)
    values = _values(thread=thread, actor=actor, fmt=fmt, max_tokens=max_tokens,
                     total=stats["total_tokens"], prefix_hash=stats["prefix_hash"], spec=spec)
    along = [_insert_statement(values)]
    if texts:
        along.append(_texts_statement(thread.workspace_id, hashes, texts))
    statement = rendering.window_statement(planned)
    if statement is None:  # nothing to read: the writes alone, still one round trip
        run_along(along)
        rendered = rendering.render_finish(planned)
    else:
        compiled, sql, params = statement
        rendered = rendering.render_finish(planned, read=(compiled, run_along(along, (sql, params))))
    record = RenderRecord.from_db(connection.alias, None, values)  # type: ignore[arg-type]  # as above
    # Events never change, so the same events shown means the same spec and tokens.
    if [i.event.pk for unit in rendered.units for i in unit] != [r.pk for r in rows]:
        record.spec = _spec_of(rendered, ids, hashes)
        record.total_tokens = rendered.body["stats"]["total_tokens"]
        RenderRecord.objects.filter(pk=record.pk).update(spec=record.spec, total_tokens=record.total_tokens)
    return rendered, record


# ------------------------------------------------------------------ LLM call links

def _request_extras(data: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The rest of the request a call sent: `data.tools` (the tool definitions, any provider's
    shape) is kept once in StoredText and replaced by `data.tools_hash` (agents send the same
    list on every call); `data.params` (model parameters: temperature, max_tokens,
    tool_choice, ...) stays inline. Returns the data and the tools' text. (Their shapes are
    eventspec's.)"""
    tools = data.get("tools")
    if tools is None:
        return data, None
    text = json.dumps(tools, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    data = {k: v for k, v in data.items() if k != "tools"}
    data["tools_hash"] = sha256(text)
    return data, text


def _named_hashes(index: int, data: dict[str, Any], where: str) -> list[tuple[str, list[str]]]:
    """The text hashes an LLM-call event's data names as the client sent them: (place, hashes)
    (their shape checked by eventspec)."""
    named = []
    if "message_hashes" in data:
        named.append((f"{where}[{index}].data.message_hashes", data["message_hashes"]))
    if "tools_hash" in data:
        named.append((f"{where}[{index}].data.tools_hash", [data["tools_hash"]]))
    return named


def call_hashes_check(*, workspace_id: int, specs: list, where: str = "events",
                      computed: frozenset[str] = frozenset()) -> None:
    """Refuse an LLM-call event that names a text hash (`data.message_hashes`, `data.tools_hash`)
    this workspace has not stored: a hash is only ever a name the server gave to this
    workspace's own text (or one `computed` from the texts the same batch carries). Every way
    events come in with data as the client sent it runs this (append, commit and OTLP through
    llm_call_prepare; sync; import)."""
    named: list[tuple[str, list[str]]] = []
    for index, spec in enumerate(specs):
        if spec.type in LLM_CALL_TYPES and isinstance(spec.data, dict):
            named.extend(_named_hashes(index, spec.data, where))
    wanted = {h for _, hashes in named for h in hashes} - computed
    if not wanted:
        return
    stored: set[str] = set()
    for chunk in batched(sorted(wanted), 500):
        stored.update(StoredText.objects.filter(workspace_id=workspace_id, sha256__in=chunk)
                      .values_list("sha256", flat=True))
    for place, hashes in named:
        if any(h not in stored and h not in computed for h in hashes):
            raise InvalidInput(f"{place} names a text this workspace has not stored: send the "
                               "messages or tools themselves, and the server keeps them by hash.",
                               details={place: "unknown text"})


def llm_call_texts(*, workspace_id: int, specs: list) -> tuple[list, list[str]]:
    """The exact `data.messages` an LLMCallStart/LLMComplete carries are replaced by their
    hashes (`data.message_hashes`), and `data.tools` by `data.tools_hash` (_request_extras);
    returns the specs and the texts to keep (texts_keep, in the caller's transaction). Hashes
    the client sent itself must name texts this workspace stored (call_hashes_check). Every way
    events come in with their data as the client sent it: append, commit and OTLP
    (llm_call_prepare), and import."""
    out: list = []
    hashes: dict[str, str] = {}  # each distinct text once: a call carries the conversation so far
    sent = set()  # indexes of the specs whose data carries hashes as the client sent them
    for index, spec in enumerate(specs):
        data = spec.data
        if spec.type not in LLM_CALL_TYPES or not isinstance(data, dict):
            out.append(spec)
            continue
        if ("message_hashes" in data and data.get("messages") is None) \
                or ("tools_hash" in data and data.get("tools") is None):
            sent.add(index)
        messages = data.get("messages")
        if messages is not None:  # a list (eventspec)
            texts = [json.dumps(m, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
                     for m in messages]
            data = {k: v for k, v in data.items() if k != "messages"}
            data["message_hashes"] = [hashes[t] if t in hashes else hashes.setdefault(t, sha256(t))
                                      for t in texts]
        data, tools_text = _request_extras(data)
        if tools_text is not None:
            hashes.setdefault(tools_text, data["tools_hash"])
        out.append(replace(spec, data=data) if data is not spec.data else spec)
    if sent:
        # (hashes this batch computed from its own messages or tools are its workspace's)
        call_hashes_check(workspace_id=workspace_id,
                          specs=[spec if i in sent else replace(spec, data=None)
                                 for i, spec in enumerate(out)],
                          computed=frozenset(hashes.values()))
    return out, list(hashes)


def llm_call_prepare(*, thread: Thread, specs: list) -> tuple[list, list[str]]:
    """llm_call_texts, and `data.render_id` (the render a call sent) must be a render of this
    thread; returns the specs and the texts to keep."""
    refs = [(index, spec.data["render_id"]) for index, spec in enumerate(specs)
            if spec.type in LLM_CALL_TYPES and isinstance(spec.data, dict)
            and spec.data.get("render_id") is not None]
    out, keep = llm_call_texts(workspace_id=thread.workspace_id, specs=specs)
    if refs:
        known = {str(pk) for pk in RenderRecord.objects.filter(  # runs before the thread's lock
            thread=thread, thread__workspace_id=thread.workspace_id,
            pk__in=[r for _, r in refs if is_uuid(r)]).values_list("pk", flat=True)}
        for index, render_id in refs:
            if not is_uuid(render_id) or str(render_id) not in known:
                raise InvalidInput(f"events[{index}].data.render_id is not a render of this thread.",
                                   details={f"events[{index}].data.render_id": "unknown render"})
    return out, keep
