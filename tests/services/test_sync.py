"""The framework sync protocol (services/sync.py)."""

import pytest
from contextstore_client import item_digest as client_digest

from contextstore.errors import Conflict, InvalidInput, StaleRevision
from contextstore.models import Event, Thread
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.sync import item_digest, sync_apply, sync_load
from contextstore.services.threads import thread_clear_context


def item(key: str, text: str, **extra) -> dict:
    return {"key": key, "event": {"type": "Message", "role": "user", "content": text,
                                  "data": {"fw": {"id": key, "text": text}}, **extra}}


def snapshot(thread: Thread) -> tuple:
    thread.refresh_from_db()
    rows = list(Event.objects.filter(thread=thread).order_by("seq").values_list(
        "seq", "position", "status", "content", "item_key", "replaced_by"))
    return (thread.revision, thread.state, thread.summary, thread.extra, thread.last_seq,
            thread.active_event_count, thread.active_tokens, thread.event_count, rows)


def assert_counters_match_rows(thread: Thread) -> None:
    """The denormalised counters equal what the rows say, after any sync."""
    thread.refresh_from_db()
    rows = list(Event.objects.filter(thread=thread))
    active = [e for e in rows if e.status == "active" and e.visible]
    assert (thread.event_count, thread.token_total, thread.active_event_count,
            thread.active_tokens, thread.last_seq) == (
        len(rows), sum(e.token_count for e in rows), len(active),
        sum(e.token_count for e in active), max((e.seq for e in rows), default=0))


def working(thread: Thread, namespace: str = "fw") -> list[tuple[str, str]]:
    return [(i["key"], i["event"].content) for i in sync_load(thread=thread, namespace=namespace)["items"]]


def test_the_client_and_server_digests_agree():
    event = {"type": "Message", "content": "é", "data": {"b": [1, 2], "a": None},
             "occurred_at": "2026-01-01T10:00:00+02:00"}
    assert item_digest(event) == client_digest(event)
    assert item_digest(event) == item_digest({**event, "occurred_at": "2020-01-01T00:00:00Z"})


def test_new_items_are_appended_in_order_and_a_replay_changes_nothing(thread, actor):
    first = sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=0,
                       items=[item("a", "one"), item("b", "two")], upload_id="u1")
    # History alone keeps the revision (as an append does); the document parts move it.
    assert first == {"status": "applied", "revision": 0, "created": 2, "rewritten": 0,
                     "removed": 0, "unchanged": 0,
                     "stored": [{"key": "a", "seq": 1, "position": 1},
                                {"key": "b", "seq": 2, "position": 2}]}
    before = snapshot(thread)
    again = sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=0,
                       items=[item("a", "one"), item("b", "two")], upload_id="u1")
    assert again == {**first, "replayed": True}
    # The same items under a new upload, on the right base: nothing new either.
    same = sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=0,
                      items=[item("a", "one"), item("b", "two")])
    assert same["created"] == 0 and same["unchanged"] == 2 and same["revision"] == 0
    assert snapshot(thread) == before
    assert working(thread) == [("a", "one"), ("b", "two")]


def test_a_rewritten_item_keeps_its_position_and_the_old_version_stays(thread, actor):
    sync_apply(thread=thread, namespace="fw", actor=actor,
               items=[item("a", "one"), item("b", "two"), item("c", "three")])
    result = sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=0,
                        items=[item("b", "TWO")])
    assert result["rewritten"] == 1 and result["created"] == 0
    assert working(thread) == [("a", "one"), ("b", "TWO"), ("c", "three")]
    old = Event.objects.get(thread=thread, content="two")
    new = Event.objects.get(thread=thread, content="TWO")
    assert (old.status, old.replaced_by_id, new.position) == ("replaced", new.pk, old.position)
    thread.refresh_from_db()
    assert thread.active_event_count == 3
    assert thread.active_tokens == sum(e.token_count for e in Event.objects.filter(
        thread=thread, status="active"))


def test_removed_items_are_retired_not_deleted(thread, actor):
    sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("a", "one"), item("b", "two")])
    result = sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=0, removed=["a"])
    assert result["removed"] == 1
    assert working(thread) == [("b", "two")]
    assert Event.objects.get(thread=thread, content="one").status == "removed"
    thread.refresh_from_db()
    assert thread.active_event_count == 1 and thread.event_count == 2
    assert_counters_match_rows(thread)


def test_a_stale_base_is_refused_and_changes_nothing_not_even_the_state(thread, actor):
    sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("a", "one")],
               state={"plan": "a"})
    thread_clear_context(thread=thread, actor=actor)  # a person, between load and save
    before = snapshot(thread)
    with pytest.raises(StaleRevision):
        sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=1,
                   items=[item("b", "two")], state={"plan": "x"}, summary="s", document={"d": 1})
    assert snapshot(thread) == before


def test_a_bad_item_refuses_the_whole_save(thread, actor):
    sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("a", "one")])
    before = snapshot(thread)
    with pytest.raises(InvalidInput):
        sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=0,
                   items=[item("b", "two"), {"key": "c", "event": {"type": ""}}],
                   state={"plan": "x"})
    assert snapshot(thread) == before


def test_items_added_by_others_come_back_keyed_and_are_not_duplicated(thread, actor):
    sync_apply(thread=thread, namespace="fw", actor=actor,
               items=[item("a", "one"), item("b", "two"), item("c", "three")])
    event_append(thread=thread, actor=actor,
                 events=[{"type": "Message", "role": "user", "content": "a note"}])
    collapse_create(thread=thread, start_position=1, end_position=2, summary_text="sum", actor=actor)
    loaded = sync_load(thread=thread, namespace="fw")
    keys = [(i["key"], i["own"], i["event"].content) for i in loaded["items"]]
    assert keys == [("cs:5", False, "sum"), ("c", True, "three"), ("cs:4", False, "a note")]
    # The adapter hands the note back changed (its own rendering): a rewrite in place.
    result = sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=loaded["revision"],
                        items=[item("cs:4", "a note (seen)"), item("d", "four")])
    assert (result["created"], result["rewritten"]) == (1, 1)
    assert working(thread) == [("cs:5", "sum"), ("c", "three"), ("cs:4", "a note (seen)"),
                               ("d", "four")]
    assert_counters_match_rows(thread)


def test_an_item_rewritten_inside_a_collapse_stays_collapsed(thread, actor):
    sync_apply(thread=thread, namespace="fw", actor=actor,
               items=[item("a", "one"), item("b", "two"), item("c", "three")])
    collapse_create(thread=thread, start_position=1, end_position=2, summary_text="sum", actor=actor)
    sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("a", "ONE")])
    new = Event.objects.get(thread=thread, content="ONE")
    assert new.status == "collapsed" and new.collapse_id is not None
    assert working(thread) == [("cs:4", "sum"), ("c", "three")]
    thread.refresh_from_db()
    assert thread.active_event_count == 2
    assert_counters_match_rows(thread)


@pytest.mark.slow
def test_a_save_in_parts_applies_only_with_the_last_part(thread, actor):
    batch = [item(f"k{i}", f"m{i}") for i in range(2500)]
    for part in range(2):
        staged = sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=0,
                            items=batch[part * 1000:(part + 1) * 1000], upload_id="big",
                            part=part, parts=3)
        assert staged["status"] == "staged"
        assert Event.objects.filter(thread=thread).count() == 0
    done = sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=0,
                      items=batch[2000:], upload_id="big", part=2, parts=3, state={"n": 1})
    assert done["created"] == 2500 and done["revision"] == 1  # with the state: a revision
    assert [k for k, _ in working(thread)] == [f"k{i}" for i in range(2500)]


def test_a_save_with_a_missing_part_is_refused(thread, actor):
    # A conflict with what is stored (the earlier parts), not a malformed request: 409.
    with pytest.raises(Conflict, match="never arrived"):
        sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("a", "one")],
                   upload_id="gap", part=1, parts=2)
    assert Event.objects.filter(thread=thread).count() == 0


def test_the_document_is_the_namespace_of_the_thread_document(thread, actor):
    sync_apply(thread=thread, namespace="fw", actor=actor, document={"summary": "x"})
    thread.refresh_from_db()
    assert thread.extra["fw"] == {"summary": "x"}
    assert sync_load(thread=thread, namespace="fw")["document"] == {"summary": "x"}


def test_counters_follow_every_kind_of_change(thread, actor):
    sync_apply(thread=thread, namespace="fw", actor=actor,
               items=[item(k, f"text {k}") for k in "abcdef"])
    collapse_create(thread=thread, start_position=1, end_position=2, summary_text="sum", actor=actor)
    sync_apply(thread=thread, namespace="fw", actor=actor,
               items=[item("a", "A"), item("c", "C"), item("g", "G")], removed=["d", "b"])
    assert_counters_match_rows(thread)
    thread_clear_context(thread=thread, actor=actor)
    sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("e", "E"), item("h", "H")],
               removed=["f"])
    assert_counters_match_rows(thread)
    assert working(thread) == [("h", "H")]  # a rewrite of a cleared item stays cleared


def test_a_save_of_items_alone_keeps_the_revision_and_writes_no_state_revision(thread, actor):
    from contextstore.models import StateRevision

    sync_apply(thread=thread, namespace="fw", actor=actor, items=[item("a", "one")])
    sync_apply(thread=thread, namespace="fw", actor=actor, removed=["a"])
    thread.refresh_from_db()
    assert thread.revision == 0 and not StateRevision.objects.filter(thread=thread).exists()
    sync_apply(thread=thread, namespace="fw", actor=actor, base_revision=0, document={"x": 1})
    thread.refresh_from_db()
    assert thread.revision == 1
