import copy

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextstore.documents import dumps, merge_patch, merge_patch_ops
from contextstore.errors import NotFound, StaleRevision
from contextstore.models import AuditLog, StateRevision
from contextstore.selectors.document import revision_document
from contextstore.services.state import state_restore, state_write


def test_a_write_bumps_the_revision_and_records_it(thread, actor):
    state_write(thread=thread, state={"a": 1}, reason="first", actor=actor)
    thread.refresh_from_db()
    assert (thread.state, thread.revision) == ({"a": 1}, 1)
    rev = StateRevision.objects.get(thread=thread, revision=1)
    assert (rev.reason, rev.actor) == ("first", actor.label)
    assert revision_document(thread=thread, revision=1) == thread.document
    # the document the thread started from is kept too, so the first write can be undone
    assert revision_document(thread=thread, revision=0)["state"] == {}
    assert AuditLog.objects.filter(action="state.write").exists()


def test_a_stale_revision_is_refused_and_nothing_changes(thread, actor):
    state_write(thread=thread, state={"a": 1}, actor=actor)
    with pytest.raises(StaleRevision) as info:
        state_write(thread=thread, state={"a": 2}, expected_revision=0, actor=actor)
    thread.refresh_from_db()
    assert (thread.state, thread.revision) == ({"a": 1}, 1)
    assert info.value.details == {"current_revision": 1, "expected_revision": 0}
    assert list(StateRevision.objects.filter(thread=thread).values_list("revision", flat=True)) == [0, 1]


def test_the_current_revision_is_accepted(thread, actor):
    state_write(thread=thread, state={"a": 1}, expected_revision=0, actor=actor)
    state_write(thread=thread, state={"a": 2}, expected_revision=1, actor=actor)
    thread.refresh_from_db()
    assert thread.state == {"a": 2}


def test_a_write_without_a_revision_is_last_write_wins_and_still_recorded(thread, actor):
    state_write(thread=thread, state={"a": 1}, actor=actor)
    state_write(thread=thread, state={"b": 2}, actor=actor)
    assert [revision_document(thread=thread, revision=r)["state"] for r in (1, 2)] == [
        {"a": 1}, {"b": 2}]


def test_merge_patch_follows_rfc_7386(thread, actor):
    state_write(thread=thread, state={"title": "Goodbye!", "author": {"givenName": "John",
                "familyName": "Doe"}, "tags": ["example", "sample"], "content": "x"}, actor=actor)
    state_write(thread=thread, merge=True, actor=actor, state={
        "title": "Hello!", "phoneNumber": "+01-123-456-7890", "author": {"familyName": None},
        "tags": ["example"]})
    thread.refresh_from_db()
    assert thread.state == {"title": "Hello!", "author": {"givenName": "John"}, "tags": ["example"],
                            "content": "x", "phoneNumber": "+01-123-456-7890"}


@pytest.mark.parametrize("target,patch,result", [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}), ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}), ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}), ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
])
def test_json_merge_patch_matches_the_rfc_examples(target, patch, result):
    # The revision's RFC 6902 operations, built from the patch alone, do exactly what the
    # merge-patch library does, key order included.
    ops = merge_patch_ops(target, patch, "")
    patched = jsonpatch.apply_patch(target, ops)
    assert merge_patch(target, patch) == result
    assert dumps(patched) == dumps(result)


def test_key_order_survives_the_round_trip(thread, actor):
    state = {"zeta": 1, "alpha": {"b": 2, "a": 1}, "mid": 3}
    state_write(thread=thread, state=state, actor=actor)
    thread.refresh_from_db()
    assert list(thread.state) == ["zeta", "alpha", "mid"] and list(thread.state["alpha"]) == ["b", "a"]


def test_restore_writes_an_earlier_revision_again(thread, actor):
    state_write(thread=thread, state={"v": 1}, memory=[{"m": "x"}], actor=actor)
    state_write(thread=thread, state={"v": 2}, memory=[], actor=actor)
    state_restore(thread=thread, revision=1, actor=actor)
    thread.refresh_from_db()
    assert (thread.state, thread.memory, thread.revision) == ({"v": 1}, [{"m": "x"}], 3)
    assert StateRevision.objects.get(thread=thread, revision=3).reason == "restore r1"
    with pytest.raises(NotFound):
        state_restore(thread=thread, revision=99, actor=actor)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc/~"), inner,
                                                                 max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(st.sampled_from("abc/~"), json_values, max_size=4)


# Pure and cheap: five times the profile's examples (300 in CI).
@settings(max_examples=5 * settings.default.max_examples)
@given(target=json_objects, patch=json_objects)
def test_patch_operations_reproduce_the_merge_byte_for_byte(target, patch):
    ops = merge_patch_ops(target, patch, "")
    patched = jsonpatch.apply_patch(target, ops)
    assert dumps(patched) == dumps(merge_patch(copy.deepcopy(target), copy.deepcopy(patch)))
