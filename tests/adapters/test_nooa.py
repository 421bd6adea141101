"""Nooa: the same agent on SQLiteStorageManager and on contextstore keeps the same events."""

import asyncio
import json
import re

from contextstore_client import ContextStore
from contextstore_client.adapters.nooa import ContextStoreStorage
from nooa.storage import SQLiteStorageManager

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


# ---------------------------------------------------------------- people, processes, limits

import copy  # noqa: E402

from nooa.context_blocks import EventBase  # noqa: E402
from nooa.storage.sqlite import _CORE_TYPES  # noqa: E402
from nooa.unifiedllm.fake import FakeLLMClient  # noqa: E402

from tests.adapters.nooa_fakes import Counter  # noqa: E402
from tests.adapters.nooa_fakes import run_code as scripted_code  # noqa: E402

NOTE = "NOTE: the user prefers metric units"
SUMMARY = "Counted the first steps."


class RecordingLLM(FakeLLMClient):
    """FakeLLMClient that keeps every call's messages: what the model receives."""

    def __init__(self, seen: list, calls: int) -> None:
        super().__init__(scripted_responses=[
            scripted_code("self.count += n\nreturn_result(self.count)", i) for i in range(calls)])
        self.seen = seen

    async def acall(self, messages, *args, **kwargs):
        self.seen.append(copy.deepcopy(messages))
        return await super().acall(messages, *args, **kwargs)


def normalized(calls: list) -> list[str]:
    """Each call's messages as text, with the ids Nooa draws at random for tool calls masked."""
    import json
    import re

    ids = re.compile(r"(prefill|call|codeact_inline)_[0-9a-f]{6,}")
    return [ids.sub(r"\1_*", json.dumps(c, default=str, indent=1)) for c in calls]


def nooa_turn(storage, n: int, seen: list) -> int:
    """One turn: a fresh agent on the storage, state restored from the last snapshot."""
    agent = Counter(llm=RecordingLLM(seen, 1), storage=storage, context={"rules": "Count exactly."})
    latest = storage.get_latest_snapshot_id()
    if latest:
        storage.restore_snapshot(latest, agent)
    result = asyncio.run(agent.bump(n))
    storage.save_snapshot(agent)
    return result


def test_the_model_sees_the_same_as_on_sqlite_with_people_acting(live_server, store, token):
    expected: list = []
    sqlite = SQLiteStorageManager()
    for number in range(6):
        nooa_turn(sqlite, number + 1, expected)
        manager = Counter(llm=FakeLLMClient(), storage=sqlite).event_manager
        if number == 1:  # docs/frameworks/nooa.md: a note is a Message event, last
            manager.add(_CORE_TYPES["Message"](content=NOTE))
        if number == 2:  # a collapse: Nooa's own Summary over the same events
            active = sqlite.event_backend.active_tags()
            manager.collapse(active[0], active[1], SUMMARY)
        if number == 3:  # a clear: EventManager.clear()
            manager.clear()

    actual: list = []
    with ContextStore(live_server.url, token[1]) as second:
        person = store.thread("nooa-scripted", agent="counter")
        for number in range(6):
            client = (store, second)[number % 2]  # two processes alternate, each its own client
            nooa_turn(ContextStoreStorage(client.thread("nooa-scripted", agent="counter")),
                      number + 1, actual)
            if number == 1:
                person.append_one("Message", NOTE, role="user")
            if number == 2:
                first = [e for e in person.events() if e.visible][:2]
                person.collapse(first[0].position, first[1].position, SUMMARY)
            if number == 3:
                person.clear_context()
    assert len(actual) == len(expected) == 6
    texts = normalized(expected)
    assert NOTE in texts[2] and SUMMARY in texts[3] and NOTE not in texts[4]  # the person acted
    for turn_number, (ours, theirs) in enumerate(zip(normalized(actual), normalized(expected),
                                                     strict=True)):
        import difflib

        assert ours == theirs, f"turn {turn_number}:\n" + "\n".join(difflib.unified_diff(
            theirs.splitlines(), ours.splitlines(), "sqlite", "contextstore", lineterm=""))


def test_after_clear_a_new_process_rebuilds_an_empty_backend(live_server, store, token):
    storage = ContextStoreStorage(store.thread("nooa-clear", agent="counter"))
    script(storage)
    Counter(llm=FakeLLMClient(), storage=storage).event_manager.clear()
    with ContextStore(live_server.url, token[1]) as other:
        rebuilt = ContextStoreStorage(other.thread("nooa-clear", agent="counter")).event_backend
        assert list(rebuilt.all_events()) == [] and rebuilt.active_tags() == []
    assert store.thread("nooa-clear", agent="counter").events(status="cleared")  # kept


class ToolCall_v2(EventBase):  # noqa: N801 - a name Nooa takes and identifiers don't
    event_type: str = "tool.call-v2"
    content: str = ""


def test_custom_event_type_names_are_kept(live_server, store, token):
    thread = store.thread("nooa-types", agent="counter")
    storage = ContextStoreStorage(thread)
    storage.event_backend.register_event_type(ToolCall_v2)
    manager = Counter(llm=FakeLLMClient(), storage=storage).event_manager
    tag = manager.add(ToolCall_v2(content="ran it"))
    assert thread.events()[-1].type == "tool.call-v2"  # the server takes the name as it is
    with ContextStore(live_server.url, token[1]) as other:
        rebuilt = ContextStoreStorage(other.thread("nooa-types", agent="counter")).event_backend
        rebuilt.register_event_type(ToolCall_v2)
        # A fresh backend deserializes from the data, so the name survives whatever the type.
        rebuilt._load()
        assert rebuilt.get(tag).event_type == "tool.call-v2"


class Spaced(EventBase):
    event_type: str = "a step with spaces"
    content: str = ""


def test_a_type_name_no_server_takes_is_stored_as_a_generic_one(store):
    thread = store.thread("nooa-spaced", agent="counter")
    storage = ContextStoreStorage(thread)
    storage.event_backend.register_event_type(Spaced)
    tag = Counter(llm=FakeLLMClient(), storage=storage).event_manager.add(Spaced(content="x"))

    assert thread.events()[-1].type == "NooaEvent"
    rebuilt = ContextStoreStorage(store.thread("nooa-spaced", agent="counter")).event_backend
    rebuilt.register_event_type(Spaced)
    rebuilt._load()
    assert rebuilt.get(tag).event_type == "a step with spaces"


def test_events_keep_the_agents_own_time(store):
    from datetime import datetime, timedelta, timezone

    thread = store.thread("nooa-time", agent="counter")
    storage = ContextStoreStorage(thread)
    manager = Counter(llm=FakeLLMClient(), storage=storage).event_manager
    stamp = datetime(2026, 3, 1, 9, 30, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    manager.add(_CORE_TYPES["Message"](content="hi", timestamp=stamp))
    event = thread.events()[-1]
    assert datetime.fromisoformat(event.occurred_at) == stamp


def test_big_blocks_and_odd_block_names_do_not_break_snapshots(store):
    thread = store.thread("nooa-blocks", agent="counter")
    storage = ContextStoreStorage(thread)
    agent = Counter(llm=FakeLLMClient(), storage=storage, context={
        "huge": "x" * 25_000, "a/b": "slash", "what?": "question", "tag#1": "hash"})
    snapshot = storage.save_snapshot(agent)
    blocks = {b.name: b.value for b in thread.blocks()}
    assert blocks["what?"] == "question" and blocks["tag#1"] == "hash"
    assert blocks["a∕b"] == "slash"
    assert len(blocks["huge"]) <= 20_000 and blocks["huge"].startswith("xxx")
    restored = Counter(llm=FakeLLMClient(), storage=storage)
    storage.restore_snapshot(snapshot, restored)
    assert restored.context_manager["huge"] == "x" * 25_000
    assert restored.context_manager["a/b"] == "slash"


def test_5000_events_in_one_save(store):
    from contextstore_client import item_digest  # noqa: F401 - the protocol the backend uses

    thread = store.thread("nooa-big", agent="counter")
    items = [{"key": f"k{i}", "event": {"type": "Message", "content": f"m{i}", "data": {"nooa": {
        "tag": str(i + 1), "event": _CORE_TYPES["Message"](content=f"m{i}").model_dump(mode="json")}}}}
        for i in range(5000)]
    thread.sync_save("nooa", items=items)
    backend = ContextStoreStorage(thread).event_backend
    assert len(backend.active_tags()) == 5000
    assert backend.get("5000").content == "m4999"


def test_every_model_call_is_logged_with_the_exact_messages_sent(store):
    from contextstore_client.adapters.nooa import log_llm_calls

    seen: list = []
    thread = store.thread("nooa-calls", agent="counter")
    storage = ContextStoreStorage(thread)
    agent = Counter(llm=RecordingLLM(seen, 3), storage=storage, context={"rules": "Count ünï."})
    unsubscribe = log_llm_calls(agent, thread)
    assert [asyncio.run(agent.bump(2)), asyncio.run(agent.bump(3))] == [2, 5]
    unsubscribe()
    asyncio.run(agent.bump(1))  # no longer logged

    starts = thread.events(type="LLMCallStart")
    assert len(starts) == 2 and len(seen) == 3
    import json

    for event, sent in zip(starts, seen, strict=False):
        call = thread.llm_call(event.seq)
        assert call["render_id"] is None and event.data["model"] == "fake-model"
        assert call["messages"] == json.loads(json.dumps(sent, default=str))
    # the logged calls are runtime events: a new process rebuilds the same Nooa events
    again = ContextStoreStorage(store.thread("nooa-calls", agent="counter")).event_backend
    assert again.active_tags() == storage.event_backend.active_tags()


def nested_script(storage) -> str:
    """Two calls, a collapse, a collapse around it, updates and removals (of the newest event,
    of a summary); returns the snapshot id."""
    agent = counter(storage)
    asyncio.run(agent.bump(2))
    asyncio.run(agent.bump(3))
    manager = agent.event_manager
    tags = storage.event_backend.active_tags()
    inner = manager.collapse(tags[1], tags[3], "Steps two to four.")
    outer = manager.collapse(tags[0], tags[5], "The first call.")
    assert storage.event_backend.get(outer).children_tags[1] == inner
    manager.update(tags[7], metadata={"checked": True})
    manager.update(inner, summary_text="Steps two to four, again.")
    manager.remove(tags[8])
    manager.remove(storage.event_backend.active_tags()[-1])
    last = manager.collapse(tags[9], tags[10], "A summary removed later.")
    manager.remove(last)
    return storage.save_snapshot(agent)


def numbering(backend) -> tuple:
    """Every event's tag, type and status, the active order, the children of each summary and
    the next tag the backend hands out."""
    children = {backend.find_tag(e): list(e.children_tags) for e in backend.all_events()
                if getattr(e, "children_tags", None)}
    return shape(backend), children, backend.allocate_next_tag()


def test_nested_collapses_updates_and_removals_number_as_on_sqlite_in_a_new_process(
    live_server, store, token, tmp_path
):
    path = tmp_path / "nooa.db"
    mine = SQLiteStorageManager(path)
    sqlite_snapshot = nested_script(mine)
    mine.close()
    snapshot = nested_script(ContextStoreStorage(store.thread("nooa-nested", agent="counter")))

    reopened = SQLiteStorageManager(path)  # Nooa's own backend, as a new process opens it
    with ContextStore(live_server.url, token[1]) as other:
        rebuilt = ContextStoreStorage(other.thread("nooa-nested", agent="counter"))
        assert numbering(rebuilt.event_backend) == numbering(reopened.event_backend)

        # A new process restores the snapshot, keeps running and snapshots again; then another.
        for storage, snap in ((reopened, sqlite_snapshot), (rebuilt, snapshot)):
            agent = counter(storage)
            storage.restore_snapshot(snap, agent)
            asyncio.run(agent.bump(4))
            storage.save_snapshot(agent)
    reopened.close()
    again = SQLiteStorageManager(path)
    with ContextStore(live_server.url, token[1]) as third:
        ours = ContextStoreStorage(third.thread("nooa-nested", agent="counter"))
        assert numbering(ours.event_backend) == numbering(again.event_backend)


def every_field(backend) -> list:
    """Every event as Nooa keeps it, field by field, with the ids Nooa draws at random each run
    (call ids, tool call ids) made equal; timestamps left out (the test of the agent's own time
    covers them)."""
    def same_ids(value) -> str:
        text = json.dumps(value, default=str, sort_keys=True)
        return re.sub(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}|_[0-9a-f]{8}\b", "<id>", text)

    return sorted((backend.find_tag(e), {k: same_ids(v) for k, v in e.model_dump().items()
                                         if k != "timestamp"})
                  for e in backend.all_events())


def nooa_order(backend) -> tuple:
    """What Nooa's queries read in order: all_events (SQLite's insertion order, which an update
    in place keeps), the active tags, and the next tag it hands out."""
    return ([(backend.find_tag(e), e.event_type, e.status.value) for e in backend.all_events()],
            backend.active_tags(), backend.max_tag_num())


def test_every_event_field_equals_sqlite_after_a_rebuild_and_after_a_restore_and_run(
    live_server, store, token, tmp_path
):
    path = tmp_path / "nooa.db"
    mine = SQLiteStorageManager(path)
    sqlite_snapshot = nested_script(mine)
    mine.close()
    snapshot = nested_script(ContextStoreStorage(store.thread("nooa-fields", agent="counter")))

    reopened = SQLiteStorageManager(path)
    with ContextStore(live_server.url, token[1]) as other:
        rebuilt = ContextStoreStorage(other.thread("nooa-fields", agent="counter"))
        assert every_field(rebuilt.event_backend) == every_field(reopened.event_backend)
        # the updated event (tag 9) stays where Nooa inserted it, before the summaries
        assert nooa_order(rebuilt.event_backend) == nooa_order(reopened.event_backend)
        assert [t for t, _, _ in nooa_order(rebuilt.event_backend)[0]][6:9] == ["8", "9", "12"]
        for storage, snap in ((reopened, sqlite_snapshot), (rebuilt, snapshot)):
            agent = counter(storage)
            storage.restore_snapshot(snap, agent)
            asyncio.run(agent.bump(4))
        assert every_field(rebuilt.event_backend) == every_field(reopened.event_backend)
        assert nooa_order(rebuilt.event_backend) == nooa_order(reopened.event_backend)
        query = [(e.tag, e.event_type) for e in storage.event_backend.all_events()]
    reopened.close()
    # and in a third process, after the run
    again = SQLiteStorageManager(path)
    with ContextStore(live_server.url, token[1]) as third:
        ours = ContextStoreStorage(third.thread("nooa-fields", agent="counter"))
        assert nooa_order(ours.event_backend) == nooa_order(again.event_backend)
        assert every_field(ours.event_backend) == every_field(again.event_backend)
        assert [(e.tag, e.event_type) for e in ours.event_backend.all_events()] == query
    again.close()
