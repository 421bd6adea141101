"""The long-term store: one `store_batch` runs a list of ops (get, put, move, search,
list_namespaces, sweep) in one transaction, results in order; and a person's restore of a version.

The op shapes are those of the client's `store_batch` (docs/api.md, "Long-term store"),
checked at the door by contextstore/storespec.py; the service runs checked ops. Every
put, delete and move writes a StoreItemVersion, so each change is visible and undoable
(`store_item_restore`). Recall by meaning scores stored vectors by exact cosine
(contextstore/vectors.py): vectors the client sends with a put (LangGraph's store `index`) or
that the deployment's embedder computes in a worker (tasks.embed_store_items); a search with a
`query` and no vectors anywhere recalls by words (the share of the query's words found).

Expiry: an item past its `expires_at` is invisible to reads with `omit_expired` (the API's
default); beat's `store_expire`, or a `sweep` op (the LangGraph adapter's sweeper), turns it into
a deleted version (undoable), and retention deletes old versions.
"""

import json
import logging
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from contextstore import embeddings, pgvector, vectors
from contextstore.errors import Conflict, NotFound
from contextstore.models import StoreItem, StoreItemVersion, StoreVector, Workspace
from contextstore.models.store import SEPARATOR, namespace_path, path_labels
from contextstore.outbox import publish_after_commit
from contextstore.redaction import redact_each, use_workspace
from contextstore.selectors.store_filter import StoreFilter
from contextstore.services.common import Actor

logger = logging.getLogger(__name__)
EMBED_TASK = "contextstore.tasks.embed_store_items"
Action = StoreItemVersion.Action
WORD = re.compile(r"\w+")


# --- the batch -------------------------------------------------------------------------------

@dataclass
class _Batch:
    workspace: Workspace
    actor: Actor
    now: datetime
    embed: list[int]


def store_batch(*, workspace: Workspace, ops: list[dict[str, Any]], actor: Actor,
                now: datetime | None = None) -> list[Any]:
    """Run `ops`, checked by storespec.check_ops, in order in one transaction; a move onto an
    existing key (409) changes nothing."""
    checked = ops
    rules = use_workspace(workspace)
    for op in checked:
        if op["op"] == "put" and op["value"] is not None:
            [op["value"]] = redact_each(rules, [op["value"]])
    batch = _Batch(workspace, actor, now or timezone.now(), [])
    with transaction.atomic():
        results = [_RUN[op["op"]](batch, op) for op in checked]
        if batch.embed and embeddings.configured():
            item_pks = list(batch.embed)
            transaction.on_commit(lambda: publish_after_commit(send_embed, item_pks))
    return results


def send_embed(item_pks: Any) -> None:
    """Hand items to the embedding worker; on a broker failure they stay without vectors
    (searched by words) until their next put."""
    try:
        current_app.tasks[EMBED_TASK].delay(list(item_pks))
    except Exception:  # noqa: BLE001 - any broker failure
        logger.exception("could not send store items %s to the embedding worker", item_pks)


def _live(workspace: Workspace, now: datetime, omit_expired: bool = True) -> QuerySet[StoreItem]:
    """The workspace's items; with `omit_expired` False also those past their TTL that beat's
    store_expire has not swept yet (LangGraph's TTLConfig.omit_expired, PostgresStore's default)."""
    items = StoreItem.objects.filter(workspace=workspace, deleted_at__isnull=True)
    if not omit_expired:
        return items
    return items.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))


def item_dict(item: StoreItem, score: float | None = None, *, with_score: bool = False) -> dict[str, Any]:
    out = {"namespace": item.namespace, "key": item.key, "value": item.value,
           "created_at": item.created_at.isoformat(), "updated_at": item.updated_at.isoformat(),
           "version": item.version,
           "expires_at": item.expires_at.isoformat() if item.expires_at else None}
    if with_score:
        out["score"] = score
    return out


def _refresh(batch: _Batch, items: list[StoreItem]) -> None:
    """Push back the expiry of items read with refresh_ttl (their TTL from now), in pk order so
    that concurrent searches lock their rows in the same order (no deadlock)."""
    for item in sorted(items, key=lambda item: item.pk):
        if item.ttl_minutes:
            item.expires_at = batch.now + timedelta(minutes=item.ttl_minutes)
            StoreItem.objects.filter(pk=item.pk).update(expires_at=item.expires_at)


def _get(batch: _Batch, op: dict[str, Any]) -> dict[str, Any] | None:
    item = _live(batch.workspace, batch.now, op["omit_expired"]).filter(
        path=namespace_path(op["namespace"]), key=op["key"]).first()
    if item is None:
        return None
    if op["refresh_ttl"]:
        _refresh(batch, [item])
    return item_dict(item)


def _locked(batch: _Batch, namespace: list[str], key: str) -> StoreItem | None:
    return StoreItem.objects.select_for_update().filter(
        workspace=batch.workspace, path=namespace_path(namespace), key=key).first()


def _is_live(item: StoreItem | None, now: datetime) -> bool:
    return item is not None and item.deleted_at is None and (
        item.expires_at is None or item.expires_at > now)


def _version(batch: _Batch, item: StoreItem, action: str, *, other_key: str = "",
             restored: int | None = None) -> None:
    StoreItemVersion.objects.create(item=item, version=item.version, action=action, value=item.value,
                                    other_key=other_key, restored=restored,
                                    actor=batch.actor.label[:200], created_at=batch.now)


def _write(batch: _Batch, item: StoreItem | None, namespace: list[str], key: str, *,
           value: dict[str, Any] | None, index: list[str] | None, ttl: float | None,
           action: str, other_key: str = "", restored: int | None = None) -> StoreItem:
    """Set an item's value (None: delete) as its next version; the row is created, revived or
    updated."""
    if item is None:
        item = StoreItem(workspace=batch.workspace, path=namespace_path(namespace),
                         depth=len(namespace), key=key, version=0, created_at=batch.now)
    elif not _is_live(item, batch.now) and value is not None:
        item.created_at = batch.now  # a new life of the key
    item.version += 1
    item.value = value
    item.updated_at = batch.now
    if value is None:
        item.deleted_at, item.text, item.expires_at, item.ttl_minutes = batch.now, "", None, None
    else:
        item.deleted_at = None
        item.index_fields = index
        item.text = indexed_text(value, index)
        item.ttl_minutes = ttl
        item.expires_at = batch.now + timedelta(minutes=ttl) if ttl else None
    try:
        with transaction.atomic():
            item.save()
    except IntegrityError:  # created meanwhile by a concurrent batch: write onto it
        existing = _locked(batch, namespace, key)
        assert existing is not None
        return _write(batch, existing, namespace, key, value=value, index=index, ttl=ttl,
                      action=action, other_key=other_key, restored=restored)
    _version(batch, item, action, other_key=other_key, restored=restored)
    return item


def _put(batch: _Batch, op: dict[str, Any]) -> None:
    namespace, key, value = op["namespace"], op["key"], op["value"]
    item = _locked(batch, namespace, key)
    if value is None:
        if _is_live(item, batch.now):
            assert item is not None
            StoreVector.objects.filter(item=item).delete()
            _write(batch, item, namespace, key, value=None, index=None, ttl=None, action=Action.DELETE)
        return None
    item = _write(batch, item, namespace, key, value=value, index=op["index"], ttl=op["ttl"],
                  action=Action.PUT)
    _set_vectors(batch, item, op["vectors"])
    return None


def _add_vectors(item: StoreItem, given: dict[str, list[float]]) -> None:
    """Keep an item's vectors (and their copy in pgvector's column where the database has it)."""
    rows = StoreVector.objects.bulk_create([
        StoreVector(item=item, field=field, dims=len(vec), data=vectors.pack(vec))
        for field, vec in given.items()])
    if pgvector.enabled():  # writes go to the default database
        pgvector.add([(row.pk, given[row.field]) for row in rows])


def _set_vectors(batch: _Batch, item: StoreItem, given: dict[str, list[float]] | None) -> None:
    StoreVector.objects.filter(item=item).delete()
    if given:
        _add_vectors(item, given)
    elif item.index_fields != [] and item.text:
        batch.embed.append(item.pk)


def _move(batch: _Batch, op: dict[str, Any]) -> dict[str, Any] | None:
    namespace, key, new_key = op["namespace"], op["key"], op["new_key"]
    source = _locked(batch, namespace, key)
    if not _is_live(source, batch.now):
        return None
    assert source is not None
    if new_key == key:
        return item_dict(source)
    target = _locked(batch, namespace, new_key)
    if _is_live(target, batch.now):
        raise Conflict(f"an item with key {new_key!r} already exists in this namespace.",
                       details={"new_key": "exists"})
    return item_dict(_move_item(batch, source, target, namespace, new_key))


def _move_item(batch: _Batch, source: StoreItem, target: StoreItem | None, namespace: list[str],
               new_key: str) -> StoreItem:
    value, index, ttl = source.value, source.index_fields, source.ttl_minutes
    moved = list(StoreVector.objects.filter(item=source))
    _write(batch, source, namespace, source.key, value=None, index=None, ttl=None,
           action=Action.MOVE_OUT, other_key=new_key)
    target = _write(batch, target, namespace, new_key, value=value, index=index, ttl=ttl,
                    action=Action.MOVE_IN, other_key=source.key)
    StoreVector.objects.filter(item=target).delete()
    StoreVector.objects.filter(pk__in=[v.pk for v in moved]).update(item=target)
    return target


def _prefix_range(queryset: QuerySet[StoreItem], labels: list[str]) -> QuerySet[StoreItem]:
    """Items whose namespace starts with `labels`: a range of the (workspace, path) index."""
    if not labels:
        return queryset
    low = namespace_path(labels)
    return queryset.filter(path__gte=low, path__lt=low[:-1] + chr(ord(SEPARATOR) + 1))


def _search(batch: _Batch, op: dict[str, Any]) -> list[dict[str, Any]]:
    candidates = _prefix_range(_live(batch.workspace, batch.now, op["omit_expired"]),
                               op["namespace_prefix"])
    limit, offset, flt = op["limit"], op["offset"], op["filter"]
    if flt:  # evaluated by the database (selectors/store_filter.py)
        candidates = candidates.filter(StoreFilter("value", filter=flt))
    query_vector = op["query_vector"]
    if query_vector is None and op["query"] and embeddings.configured():
        try:
            [query_vector] = embeddings.embed([op["query"]])
        except embeddings.EmbedderUnavailable:
            query_vector = None  # recall by words, below
    ordered = candidates.order_by("-updated_at", "-pk")
    ranked: list[tuple[int, float | None]] = []
    if query_vector is not None:
        ranked.extend(_rank_by_vectors(candidates, query_vector, op["distance"], offset + limit))
        if ranked and len(ranked) < offset + limit:  # then the items without vectors, newest first
            ranked += [(pk, None) for pk in ordered.filter(vectors__isnull=True).values_list(
                "pk", flat=True)[:offset + limit - len(ranked)]]
    words = WORD.findall(op["query"].lower()) if op["query"] and not ranked else []
    result: list[tuple[StoreItem, float | None]]
    if not ranked and not words:
        result = [(item, None) for item in ordered[offset:offset + limit]]
    else:  # rank by ids and scores alone, then read the page's items
        if words:
            for pk, text in ordered.values_list("pk", "text").iterator(chunk_size=5000):
                hits = sum(1 for w in words if w in text)
                if hits:
                    ranked.append((pk, hits / len(words)))
            ranked.sort(key=lambda pair: -(pair[1] or 0.0))  # stable: equal scores newest first
        page = ranked[offset:offset + limit]
        items = StoreItem.objects.in_bulk([pk for pk, _ in page])
        result = [(items[pk], score) for pk, score in page if pk in items]
    if op["refresh_ttl"]:
        _refresh(batch, [item for item, _ in result])
    return [item_dict(item, score, with_score=True) for item, score in result]


def _rank_by_vectors(candidates: QuerySet[StoreItem], query: list[float], distance: str,
                     need: int) -> list[tuple[int, float]]:
    """The candidates with vectors of the query's dimensions, best first (an item's score is its
    best field's), at least the first `need` of them: by pgvector where the database has it
    (contextstore/pgvector.py), else exactly over every stored vector (vectors.scores)."""
    if pgvector.enabled(candidates.db):
        return list(pgvector.rank(candidates, query, distance, need))
    rows = StoreVector.objects.filter(item__in=candidates, dims=len(query)) \
        .values_list("item_id", "data")
    pks, packed = [], []
    for pk, data in rows:
        pks.append(pk)
        packed.append(bytes(data))
    scores: dict[int, float] = {}
    for pk, score in zip(pks, vectors.scores(query, packed, distance), strict=True):
        scores[pk] = max(score, scores.get(pk, -math.inf))
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def _list_namespaces(batch: _Batch, op: dict[str, Any]) -> list[list[str]]:
    prefix, suffix, max_depth = op["prefix"], op["suffix"], op["max_depth"]
    literal: list[str] = []
    for label in prefix or []:
        if label == "*":
            break
        literal.append(label)
    paths = _prefix_range(_live(batch.workspace, batch.now, op["omit_expired"]), literal) \
        .order_by().values_list("path", flat=True).distinct()
    found: set[tuple[str, ...]] = set()
    for path in paths:
        labels = path_labels(path)
        if prefix and not _labels_match(labels[:len(prefix)], prefix):
            continue
        if suffix and (len(labels) < len(suffix) or not _labels_match(labels[-len(suffix):], suffix)):
            continue
        found.add(tuple(labels[:max_depth] if max_depth else labels))
    ordered = sorted(found)
    return [list(ns) for ns in ordered[op["offset"]:op["offset"] + op["limit"]]]


def _labels_match(labels: list[str], pattern: list[str]) -> bool:
    return len(labels) == len(pattern) and all(
        p in ("*", label) for label, p in zip(labels, pattern, strict=True))


def _expire(batch: _Batch, item: StoreItem) -> None:
    StoreVector.objects.filter(item=item).delete()
    _write(batch, item, item.namespace, item.key, value=None, index=None, ttl=None,
           action=Action.EXPIRE)


def _expired(now: datetime) -> QuerySet[StoreItem]:
    """Items past their TTL and not swept yet, locked, skipping any another sweep holds."""
    return StoreItem.objects.select_for_update(skip_locked=True).filter(
        deleted_at__isnull=True, expires_at__lte=now)


def _sweep(batch: _Batch, op: dict[str, Any]) -> int:
    """The sweep op (PostgresStore's sweep_ttl, from the LangGraph adapter's sweeper): the
    workspace's expired items under `namespace_prefix` become deleted versions, as beat's
    store_expire makes them, by the batch's actor. The count swept."""
    items = list(_prefix_range(_expired(batch.now).filter(workspace=batch.workspace),
                               op["namespace_prefix"]).order_by("pk"))
    for item in items:
        _expire(batch, item)
    return len(items)


_RUN: dict[str, Any] = {"get": _get, "put": _put, "move": _move, "search": _search,
                        "list_namespaces": _list_namespaces, "sweep": _sweep}


# --- indexed text ----------------------------------------------------------------------------

def indexed_text(value: dict[str, Any], fields: list[str] | None) -> str:
    """The words recall by words reads (lowercased): the texts at the index's field paths,
    or every string of the value by default; "" when not indexed."""
    if fields == []:
        return ""
    texts = field_texts(value, fields)
    return "\n".join(t for _, t in texts).lower()


def field_texts(value: Any, fields: list[str] | None) -> list[tuple[str, str]]:
    """(field path, text) for each index field (LangGraph's paths: "a.b", "a[0]", "a[*].b",
    "$" for the whole value); the default is the whole value."""
    out: list[tuple[str, str]] = []
    for field in fields or ["$"]:
        for found in _at_path(value, field):
            out.append((field, found if isinstance(found, str) else
                        json.dumps(found, ensure_ascii=False, sort_keys=True)))
    return out


_STEP = re.compile(r"([^.\[\]]+)|\[(\*|-?\d+)\]")


def _at_path(value: Any, path: str) -> list[Any]:
    if path in ("$", ""):
        return _strings(value)
    current = [value]
    for name, index in _STEP.findall(path):
        nxt: list[Any] = []
        for node in current:
            if name:
                if isinstance(node, dict) and name in node:
                    nxt.append(node[name])
            elif isinstance(node, list):
                if index == "*":
                    nxt.extend(node)
                elif -len(node) <= int(index) < len(node):
                    nxt.append(node[int(index)])
        current = nxt
    return [v for v in current if v is not None]


def _strings(value: Any) -> list[Any]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [] if value is None else [value]


# --- embeddings, expiry, a person's restore ----------------------------------------------------

def store_items_embed(*, item_pks: list[int]) -> int:
    """Embed the indexed texts of items that have no vectors, in one call to the deployment's
    embedder (a worker runs it). Returns how many items got vectors."""
    todo: list[tuple[StoreItem, list[tuple[str, str]]]] = []
    for item in StoreItem.objects.filter(pk__in=item_pks, deleted_at__isnull=True, vectors__isnull=True):
        if item.value is not None and item.index_fields != []:
            texts = field_texts(item.value, item.index_fields)
            if texts:
                todo.append((item, texts))
    if not todo:
        return 0
    vecs = iter(embeddings.embed([t for _, texts in todo for _, t in texts]))
    done = 0
    with transaction.atomic():
        for item, texts in todo:
            fields = [(field, next(vecs)) for field, _ in texts]
            current = StoreItem.objects.select_for_update().filter(pk=item.pk, version=item.version).first()
            if current is None:
                continue  # changed meanwhile: its own put queued it again
            best: dict[str, list[float]] = {}
            for i, (field, vec) in enumerate(fields):
                best[field if field not in best else f"{field}#{i}"] = vec
            _add_vectors(current, best)
            done += 1
    return done


def store_expire(*, now: datetime | None = None, batch_size: int = 500) -> int:
    """Turn items past their TTL into deleted versions (undoable); beat runs it."""
    now = now or timezone.now()
    count = 0
    actor = Actor.system("ttl")
    while True:
        with transaction.atomic():
            items = list(_expired(now).select_related("workspace")[:batch_size])
            for item in items:
                _expire(_Batch(item.workspace, actor, now, []), item)
        count += len(items)
        if len(items) < batch_size:
            return count


def store_versions_prune(*, workspace: Workspace, cutoff: datetime) -> int:
    """Retention: versions older than `cutoff` that are not an item's current one, and items
    deleted before it (with their versions)."""
    gone, _ = StoreItem.objects.filter(workspace=workspace, deleted_at__lt=cutoff).delete()
    old = StoreItemVersion.objects.filter(item__workspace=workspace, created_at__lt=cutoff) \
        .exclude(version=F("item__version"))
    pruned, _ = old.delete()
    return gone + pruned


def store_item_edit(*, item: StoreItem, value: dict[str, Any], actor: Actor) -> StoreItem:
    """A person's edit of an item's value (the dashboard, which checks it is a JSON object), as
    its next version; it keeps the item's index fields and TTL. Vectors the client sent are
    dropped (they described the old value): the deployment's embedder, if any, embeds the new one."""
    [value] = redact_each(use_workspace(item.workspace), [value])
    batch = _Batch(item.workspace, actor, timezone.now(), [])
    with transaction.atomic():
        item = StoreItem.objects.select_for_update().select_related("workspace").get(pk=item.pk)
        if not _is_live(item, batch.now):
            raise Conflict("This item is deleted: restore a version first.")
        edited = _write(batch, item, item.namespace, item.key, value=value, index=item.index_fields,
                        ttl=item.ttl_minutes, action=Action.PUT)
        _set_vectors(batch, edited, None)
        if batch.embed and embeddings.configured():
            transaction.on_commit(lambda: publish_after_commit(send_embed, [edited.pk]))
    return edited


def store_item_undo(*, item: StoreItem, actor: Actor) -> StoreItem:
    """Undo the item's latest change, as its next version: a move is moved back (when the old
    key is free), anything else makes the item what it was before (the first put: deleted)."""
    return _restore(item=item, version=None, actor=actor)


def store_item_restore(*, item: StoreItem, version: int, actor: Actor) -> StoreItem:
    """Make the item what it was at `version` (a deletion: deleted), as its next version."""
    return _restore(item=item, version=version, actor=actor)


def _restore(*, item: StoreItem, version: int | None, actor: Actor) -> StoreItem:
    now = timezone.now()
    batch = _Batch(item.workspace, actor, now, [])
    use_workspace(item.workspace)
    with transaction.atomic():
        item = StoreItem.objects.select_for_update().select_related("workspace").get(pk=item.pk)
        namespace = item.namespace
        value: dict[str, Any] | None = None
        if version is None:
            latest = StoreItemVersion.objects.get(item=item, version=item.version)
            if latest.action in (Action.MOVE_IN, Action.MOVE_OUT):
                return _undo_move(batch, item, latest, namespace)
            version = item.version - 1
            if version:
                value = StoreItemVersion.objects.get(item=item, version=version).value
        else:
            target = StoreItemVersion.objects.filter(item=item, version=version).first()
            if target is None or version >= item.version:
                raise NotFound("no earlier version with that number.")
            value = target.value
        if value is None:
            if not _is_live(item, now):
                return item
            StoreVector.objects.filter(item=item).delete()
        restored = _write(batch, item, namespace, item.key, value=value, index=item.index_fields,
                          ttl=None, action=Action.RESTORE, restored=version or None)
        if value is not None:
            _set_vectors(batch, restored, None)
            if batch.embed and embeddings.configured():
                transaction.on_commit(lambda: publish_after_commit(send_embed, [restored.pk]))
        return restored


def _undo_move(batch: _Batch, item: StoreItem, latest: StoreItemVersion,
               namespace: list[str]) -> StoreItem:
    other = StoreItem.objects.select_for_update().filter(
        workspace=item.workspace, path=item.path, key=latest.other_key).first()
    if latest.action == Action.MOVE_IN:
        if not _is_live(item, batch.now) or _is_live(other, batch.now):
            raise Conflict(f"the key {latest.other_key!r} is taken again; restore a version instead.")
        _move_item(batch, item, other, namespace, latest.other_key)
        return StoreItem.objects.get(pk=item.pk)
    if other is None or not _is_live(other, batch.now) or _is_live(item, batch.now):
        raise Conflict(f"{latest.other_key!r} changed since the move; restore a version instead.")
    _move_item(batch, other, item, namespace, item.key)
    return StoreItem.objects.get(pk=item.pk)
