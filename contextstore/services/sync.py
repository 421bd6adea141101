"""One sync protocol for every framework adapter.

An adapter keeps its framework's transcript (messages, events) in a thread. It loads the
working context (`sync_load`), lets the framework run, and saves what changed (`sync_apply`):

- items: the framework's items that are new or changed since the load, each with the framework's
  own stable id as `key` (or a content digest where the framework has none) and the event to
  store. A new key is appended; a known key whose content changed is rewritten *in place*: the
  new version takes the old one's position (and status), the old one is kept as history with
  status `replaced` and a pointer to its replacement. An unchanged item is a no-op, so a replay
  changes nothing.
- removed: keys the framework dropped; their events are retired (status `removed`), never deleted.
- state / memory / summary / last_results / document: the non-transcript part of the save (the
  thread's state, memory, summary, clientai step results, the framework's namespace of the
  thread document), written in the same transaction.
- base_revision: the revision the adapter loaded. A stale one is refused (412) and nothing
  changes, whatever part of the save was bad. The revision moves with the document (state,
  summary, document, ... and a clear); a save of items alone keeps it, as an append does, so
  item-only writers (Nooa write-through, Agent Framework's appends) never make others stale.

Items that people or workers added (a note, the Summary of a collapse, an un-cleared event)
have no key of this framework; `sync_load` names them `cs:<seq>` so the adapter can hand them
back unchanged (a no-op) or changed (a rewrite in place, like its own items).

The save goes through the one door of a framework save (services/commits.thread_commit): the
stale check, the replay by upload id (the batch id), the fast path. A save larger than one
request is sent in parts sharing an upload id: parts before the last are only staged
(validated, kept in the replay store, the thread untouched); the last part applies every part
in one transaction. So a multi-part save is atomic: other readers never see half of it, a
refusal leaves the thread as it was, and a client that dies mid-upload leaves only a staged
record (expiring with the answers, after COMMIT_REPLAY_HOURS). The answer is kept under the
upload id, so replaying the last part (a lost response) returns the same answer instead of a
412; another last part under the same upload id is a 409.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from contextstore.errors import Conflict, InvalidInput
from contextstore.eventspec import EventSpec, event_spec
from contextstore.models import Event, Thread
from contextstore.ranges import positive_int
from contextstore.redaction import redact_events, use_workspace
from contextstore.selectors.peteos import thread_to_peteos
from contextstore.services import commits
from contextstore.services.common import UNSET, Actor, lock_thread
from contextstore.services.renders import call_hashes_check
from contextstore.services.summaries import summarization_check

FOREIGN_PREFIX = "cs:"
RETIRED = (Event.Status.REPLACED, Event.Status.REMOVED)
FIELDS = ("pk", "seq", "item_key", "client_id", "payload_hash", "position", "status", "visible",
          "token_count", "collapse", "type", "role", "content", "parts", "data", "anchor", "step",
          "call_id")


def item_digest(event: dict[str, Any]) -> str:
    """The digest of an item's event as the adapter sends it (the client computes the same).

    occurred_at and run_id are left out: they say when and in which call the item was written,
    not what it says.
    """
    payload = {k: v for k, v in event.items() if k not in ("occurred_at", "run_id", "client_id")}
    return hashlib.sha256(
        json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str).encode()
    ).hexdigest()


# -------------------------------------------------------------- the framework's namespace

def namespace_document(thread: Thread, namespace: str) -> Any:
    """The framework's part of the thread document (today `Thread.extra[namespace]`).

    The only reader and writer of that place, so moving it into the revisioned document is a
    change here.
    """
    return (thread.extra or {}).get(namespace)


def _with_namespace_document(thread: Thread, namespace: str, value: Any) -> dict[str, Any]:
    """The document's `extra` with the framework's part set to value (None removes it)."""
    extra = dict(thread.extra or {})
    if value is None:
        extra.pop(namespace, None)
    else:
        extra[namespace] = value
    return extra


# -------------------------------------------------------------- input checks

@dataclass
class _Item:
    key: str  # as the adapter names it, without the namespace
    raw: Any  # the event as sent, redacted (an object: event_spec refused anything else)
    spec: EventSpec


def _parse_items(items: list[dict[str, Any]], offset: int = 0) -> list[_Item]:
    """The items (checked by syncspec at the door, redacted since) with their events' specs."""
    return [_Item(item["key"], item.get("event"), event_spec(item.get("event"), f"items[{i}].event"))
            for i, item in enumerate(items, offset)]


def _redacted(thread: Thread, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items with their events' secrets redacted (contextstore/redaction.py), before they
    are staged or digested: a replayed save digests the same redacted item."""
    rules = use_workspace(thread.workspace)
    events = redact_events(rules, [i.get("event") for i in items])
    return [{**i, "event": e} if e is not i.get("event") else i
            for i, e in zip(items, events, strict=True)]


# -------------------------------------------------------------- load

def sync_load(*, thread: Thread, namespace: str, format: str | None = None) -> dict[str, Any]:
    """The thread's working context as keyed items, with what a save must name as its base.

    Read under the thread's lock, so the items, the revision and the document are one moment of
    the thread (every writer takes that lock). format="peteos" adds the same moment as a peteos
    context JSON (services/peteos.py), for the adapter that loads whole contexts. The namespace
    and format are syncspec.check_load's.
    """
    prefix = namespace + ":"
    with transaction.atomic():
        thread = lock_thread(thread)
        rows = (Event.objects.filter(thread=thread, status=Event.Status.ACTIVE)
                .select_related("run").order_by("position", "seq"))
        items = []
        for event in rows.iterator(chunk_size=2000):
            item_key = event.item_key or ""
            own = item_key.startswith(prefix)
            items.append({
                "key": item_key[len(prefix):] if own else f"{FOREIGN_PREFIX}{event.seq}",
                "own": own, "digest": event.payload_hash if own else "", "event": event,
            })
        loaded = {
            "revision": thread.revision, "state": thread.state, "summary": thread.summary,
            "document": namespace_document(thread, namespace), "items": items,
        }
        if format == "peteos":
            loaded["rendered"] = thread_to_peteos(thread=thread)
    return loaded


# -------------------------------------------------------------- save

def sync_apply(
    *, thread: Thread, namespace: str, actor: Actor, items: list[dict[str, Any]] | None = None,
    removed: list[str] | None = None, base_revision: int | None = None,
    upload_id: str | None = None, part: int = 0, parts: int = 1,
    state: Any = UNSET, summary: Any = UNSET, document: Any = UNSET, memory: Any = UNSET,
    last_results: Any = UNSET,
) -> dict[str, Any]:
    """Stage one part of a save, or (the last part) apply the whole save in one transaction.

    Returns {"status": "staged", ...} for an early part, else the applied save's counts and the
    thread's new revision. The part's shapes are syncspec.check_save's (the door's); each
    item's event is checked here, after redaction (eventspec).
    """
    items = _redacted(thread, [] if items is None else items)
    removed = [] if removed is None else removed
    parsed = _parse_items(items)

    if part < parts - 1:
        assert upload_id is not None  # several parts need one (syncspec)
        answer = commits.stage(thread=thread, batch_id=upload_id, part=part,
                               payload={"items": items, "removed": removed})
        if answer is not None:
            return {"status": "applied", "upload_id": upload_id, **answer}
        return {"status": "staged", "upload_id": upload_id, "part": part, "parts": parts}

    def lock(path: str) -> tuple[Thread, bool]:
        if path == "fast" and upload_id:  # the thread and the upload's record in one read
            return commits.lock_with_record(thread, upload_id), True
        return lock_thread(thread), False

    def write(locked: Thread, path: str) -> tuple[dict[str, Any], list[commits.Statement]]:
        every, every_gone = parsed, removed
        if parts > 1:
            assert upload_id is not None
            staged = commits.staged_take(thread=locked, batch_id=upload_id)
            missing = [n for n in range(parts - 1) if str(n) not in staged]
            if missing:
                raise Conflict(f"Parts {missing} of upload {upload_id} never arrived.",
                               code="incomplete_upload", details={"missing_parts": missing})
            earlier_items: list[_Item] = []
            earlier_removed: list[str] = []
            offset = 0
            for n in range(parts - 1):
                earlier_items += _parse_items(staged[str(n)]["items"], offset)
                offset += len(staged[str(n)]["items"])
                earlier_removed += staged[str(n)]["removed"]
            every, every_gone = earlier_items + parsed, earlier_removed + removed
        return _apply(thread=locked, namespace=namespace, items=every, removed=every_gone,
                      actor=actor, state=state, summary=summary, document=document,
                      memory=memory, last_results=last_results), []

    request = {"namespace": namespace, "base_revision": base_revision, "part": part,
               "parts": parts, "items": items, "removed": removed, "state": state,
               "summary": summary, "document": document, "memory": memory,
               "last_results": last_results}
    done = commits.thread_commit(
        lock=lock, write=write, batch_id=upload_id or "", request_hash=_request_hash(request),
        expected=commits.Expected(base_revision, name="base_revision"), batch_name="upload_id")
    if done.replayed:
        return {**done.response, "replayed": True}  # the answer the first delivery got
    if done.response["created"] or done.response["rewritten"]:
        summarization_check(thread=thread)
    return done.response


def _request_hash(request: dict[str, Any]) -> str:
    """The digest a replay of the last part must match (the parts left out are not sent)."""
    sent = {name: value for name, value in request.items() if value is not UNSET}
    return hashlib.sha256(json.dumps(sent, sort_keys=True, separators=(",", ":"),
                                     default=str).encode()).hexdigest()


def _apply(*, thread: Thread, namespace: str, items: list[_Item], removed: list[str],
           actor: Actor, state: Any, summary: Any, document: Any, memory: Any,
           last_results: Any) -> dict[str, Any]:
    """The whole save, inside the caller's transaction with the thread locked: what changes,
    resolved against the stored versions, written by the one writer (commits.commit_write)."""
    prefix = namespace + ":"
    seen: set[str] = set()
    for i, item in enumerate(items):
        if item.key in seen:  # (within one part syncspec refused it; here an earlier, staged part)
            raise InvalidInput(f"items[{i}].key {item.key!r} appears twice in one save.",
                               details={f"items[{i}].key": item.key})
        seen.add(item.key)
    # an LLM call's text hashes must name this workspace's own texts (services/renders.py)
    call_hashes_check(workspace_id=thread.workspace_id, specs=[item.spec for item in items], where="items")
    current = _current_versions(thread, prefix, [*seen, *removed])

    keyed = commits.Keyed()
    unchanged = 0
    for item in items:
        digest = item_digest(item.raw)
        item.spec.payload_hash = digest
        old = current.get(item.key)
        if old is not None and old.payload_hash == digest:
            unchanged += 1
            continue
        if old is not None and old.item_key is None and _same_content(old, item.spec):
            # Stored before by an import or an earlier adapter, unchanged: it becomes this
            # item's current version as it is, rather than a second copy.
            keyed.adopt.append((old, prefix + item.key, digest))
            continue
        if old is not None:  # a rewrite stands where its old version stood, as it stood
            keyed.rewrites.append((len(keyed.fresh), old))
        keyed.places.append((None, Event.Status.ACTIVE) if old is None
                            else (old.position, old.status))
        item.spec.item_key = prefix + item.key
        keyed.fresh.append(item.spec)
    keyed.retire = [current[k] for k in dict.fromkeys(removed) if k in current and k not in seen]

    values: dict[str, Any] = {}
    for name, value in (("state", state), ("memory", memory), ("summary", summary),
                        ("last_results", last_results)):  # clientai's results, as left
        if value is not UNSET:
            values[name] = value
    if document is not UNSET:
        values["extra"] = _with_namespace_document(thread, namespace, document)
    counts = {"created": len(keyed.fresh) - len(keyed.rewrites), "rewritten": len(keyed.rewrites),
              "removed": len(keyed.retire)}
    written = commits.commit_write(
        thread=thread, actor=actor, reason=f"sync {namespace}", keyed=keyed, values=values,
        audit_action="thread.sync", audit_details={"namespace": namespace, **counts})
    return {"status": "applied", "revision": written.revision, **counts,
            "unchanged": unchanged + len(keyed.adopt),
            # (each row was inserted with its item key: never None)
            "stored": [{"key": (obj.item_key or "").removeprefix(prefix), "seq": obj.seq,
                        "position": obj.position} for obj in written.events]}


def _same_content(event: Event, spec: EventSpec) -> bool:
    return (event.type, event.role, event.content, event.parts, event.data, event.anchor,
            event.step, event.call_id) == (spec.type, spec.role, spec.content, spec.parts,
                                           spec.data, spec.anchor, spec.step, spec.call_id)


def _current_versions(thread: Thread, prefix: str, keys: list[str]) -> dict[str, Event]:
    """The current (not retired) event of each key: the framework's own items by item_key,
    `cs:<seq>` items (added by others) by their latest rewrite under this key, else by seq."""
    if not keys:
        return {}
    found: dict[str, Event] = {}
    for start in range(0, len(keys), 500):
        chunk = keys[start:start + 500]
        for event in (Event.objects.filter(thread=thread, item_key__in=[prefix + k for k in chunk])
                      .exclude(status__in=RETIRED).only(*FIELDS)):
            assert event.item_key is not None  # found by it
            found[event.item_key[len(prefix):]] = event
    # Events an earlier adapter or an import stored under the client_id "<namespace>:<key>".
    legacy = {prefix + k: k for k in keys if k not in found}
    legacy_keys = list(legacy)
    for start in range(0, len(legacy_keys), 500):
        for event in (Event.objects.filter(thread=thread, item_key__isnull=True,
                                           client_id__in=legacy_keys[start:start + 500])
                      .exclude(status__in=RETIRED).only(*FIELDS)):
            assert event.client_id is not None  # found by it
            found[legacy[event.client_id]] = event
    seqs = {}
    for key in keys:
        if key not in found and key.startswith(FOREIGN_PREFIX) \
                and (seq := positive_int(key[len(FOREIGN_PREFIX):])) is not None:
            seqs[seq] = key
    for start in range(0, len(seqs), 500):
        for event in (Event.objects.filter(thread=thread, seq__in=list(seqs)[start:start + 500])
                      .exclude(status__in=RETIRED).only(*FIELDS)):
            found[seqs[event.seq]] = event
    return found
