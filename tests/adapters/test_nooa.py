"""Nooa: the same agent on SQLiteStorageManager and on contextstore keeps the same events."""

import asyncio

from nooa.storage import SQLiteStorageManager

from contextstore.adapters.nooa import ContextStoreStorage
from contextstore.client import ContextStore
from tests.adapters.nooa_fakes import counter


def script(storage) -> tuple:
    """Two LLM-run method calls, a collapse, a disabled block, a snapshot."""
    agent = counter(storage)
    results = [asyncio.run(agent.bump(2)), asyncio.run(agent.bump(3))]
    first_call = [t for t in storage.event_backend.active_tags()
                  if storage.event_backend.get(t).metadata.get("call_id")
                  == storage.event_backend.get("1").metadata.get("call_id")]
    summary_tag = agent.event_manager.collapse(first_call[0], first_call[-1], "Counted to 2.")
    agent.context_manager.disable("scratch")
    return agent, results, summary_tag, storage.save_snapshot(agent)


def shape(backend) -> tuple:
    """Events as Nooa sees them, without ids and timestamps that differ run to run."""
    events = [(backend.find_tag(e), e.event_type, e.status.value) for e in backend.all_events()]
    return sorted(events, key=lambda item: item[0]), backend.active_tags()


def test_an_agent_keeps_the_same_events_as_on_sqlite(live_server, store, token):
    sqlite = SQLiteStorageManager()
    ours = ContextStoreStorage(store.thread("nooa-1", agent="counter"))

    _, sqlite_results, sqlite_summary, _ = script(sqlite)
    _, results, summary, _ = script(ours)

    assert results == sqlite_results == [2, 5]
    assert summary == sqlite_summary
    assert shape(ours.event_backend) == shape(sqlite.event_backend)
    # Another process sees the same: rebuilt from the thread alone.
    with ContextStore(live_server.url, token[1]) as other:
        rebuilt = ContextStoreStorage(other.thread("nooa-1", agent="counter"))
        assert shape(rebuilt.event_backend) == shape(sqlite.event_backend)
        assert rebuilt.event_backend.get(summary).children_tags == (
            sqlite.event_backend.get(sqlite_summary).children_tags)


def test_a_restored_agent_equals_the_one_restored_from_sqlite(live_server, store, token):
    sqlite = SQLiteStorageManager()
    ours = ContextStoreStorage(store.thread("nooa-2", agent="counter"))
    *_, sqlite_snapshot = script(sqlite)
    *_, snapshot = script(ours)

    with ContextStore(live_server.url, token[1]) as other:
        storage = ContextStoreStorage(other.thread("nooa-2", agent="counter"))
        restored = counter(storage)
        storage.restore_snapshot(snapshot, restored)
        assert storage.get_latest_snapshot_id() == snapshot
    expected = counter(sqlite)
    sqlite.restore_snapshot(sqlite_snapshot, expected)

    assert restored.count == expected.count == 5
    assert dict(restored.context_manager._raw_items()).keys() == dict(
        expected.context_manager._raw_items()).keys()
    assert restored.context_manager.disabled() == expected.context_manager.disabled() == {"scratch"}
    assert restored.context_manager["rules"] == "Count exactly."


def test_a_collapse_shows_in_contextstore_with_its_children_collapsed(store):
    thread = store.thread("nooa-3", agent="counter")
    storage = ContextStoreStorage(thread)
    script(storage)

    summaries = thread.events(type="Summary")
    assert [s.content for s in summaries] == ["Counted to 2."]
    collapsed = [e for e in thread.events(status="all") if e.status == "collapsed"]
    assert collapsed and all(e.data["nooa"]["event"]["event_type"] for e in collapsed)
    blocks = {b.name: (b.value, b.placement) for b in thread.blocks()}
    assert blocks["rules"] == ("Count exactly.", "prefix")
    assert blocks["scratch"] == (None, "prefix")  # disabled: suppressed, not removed


def test_updates_and_removals_survive_a_new_process_as_on_sqlite(live_server, store, token):
    sqlite = SQLiteStorageManager()
    ours = ContextStoreStorage(store.thread("nooa-4", agent="counter"))
    for storage in (sqlite, ours):
        agent, *_ = script(storage)
        agent.event_manager.update("9", metadata={"checked": True})
        agent.event_manager.remove("10")

    with ContextStore(live_server.url, token[1]) as other:
        rebuilt = ContextStoreStorage(other.thread("nooa-4", agent="counter")).event_backend
        assert shape(rebuilt) == shape(sqlite.event_backend)
        assert rebuilt.get("9").metadata["checked"] is True
        assert rebuilt.get("10") is None
