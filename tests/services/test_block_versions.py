import pytest

from contextstore.errors import NotFound
from contextstore.models import AuditLog, ContextBlock, ContextBlockVersion
from contextstore.services.blocks import block_delete, block_restore, block_upsert


def kept(thread, name):
    return list(ContextBlockVersion.objects.filter(thread=thread, name=name)
                .order_by("version").values_list("version", "value", "placement", "deleted"))


def test_every_change_keeps_a_version(thread, actor):
    block_upsert(thread=thread, name="plan", value="one", placement="prefix", actor=actor)
    block_upsert(thread=thread, name="plan", value="one", actor=actor)  # no change, no version
    block_upsert(thread=thread, name="plan", value="two", actor=actor)
    assert kept(thread, "plan") == [(1, "one", "prefix", False), (2, "two", "prefix", False)]


def test_restore_brings_back_an_earlier_version_as_a_new_one(thread, actor):
    block_upsert(thread=thread, name="plan", value="one", placement="prefix", order=3, actor=actor)
    block_upsert(thread=thread, name="plan", expr="{{ state.x }}", placement="suffix", actor=actor)
    block = block_restore(thread=thread, name="plan", version=1, actor=actor)
    assert (block.value, block.expr, block.placement, block.order, block.version) == \
        ("one", None, "prefix", 3, 3)
    log = AuditLog.objects.filter(action="block.restore").get()
    assert log.details["restored_version"] == 1 and log.details["version"] == 3


def test_a_deleted_block_comes_back_by_restoring_its_deletion(thread, actor):
    block_upsert(thread=thread, name="note", value="keep me", actor=actor)
    block_delete(thread=thread, name="note", actor=actor)
    assert not ContextBlock.objects.exists()
    deletion = ContextBlockVersion.objects.get(thread=thread, name="note", deleted=True)
    assert (deletion.version, deletion.value) == (2, "keep me")
    block = block_restore(thread=thread, name="note", version=deletion.version, actor=actor)
    assert (block.value, block.version) == ("keep me", 3)
    assert kept(thread, "note")[-1] == (3, "keep me", "suffix", False)


def test_a_recreated_block_does_not_reuse_version_numbers(thread, actor):
    block_upsert(thread=thread, name="b", value="a", actor=actor)
    block_delete(thread=thread, name="b", actor=actor)
    block, created = block_upsert(thread=thread, name="b", value="fresh", actor=actor)
    assert created and block.version == 3
    assert [v[0] for v in kept(thread, "b")] == [1, 2, 3]


def test_restoring_a_missing_version_is_a_404_and_changes_nothing(thread, actor):
    block_upsert(thread=thread, name="b", value="a", actor=actor)
    with pytest.raises(NotFound):
        block_restore(thread=thread, name="b", version=9, actor=actor)
    with pytest.raises(NotFound):
        block_restore(thread=thread, name="other", version=1, actor=actor)
    assert ContextBlock.objects.get().version == 1 and ContextBlockVersion.objects.count() == 1


def test_versions_of_another_thread_are_not_restorable(thread, session, actor):
    from contextstore.services.sessions import thread_ensure
    other = thread_ensure(session=session, name="other", actor=actor)[0]
    block_upsert(thread=other, name="b", value="theirs", actor=actor)
    with pytest.raises(NotFound):
        block_restore(thread=thread, name="b", version=1, actor=actor)
