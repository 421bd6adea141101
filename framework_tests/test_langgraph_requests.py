"""Requests per LangGraph checkpointer call, at 10 and at 10,000 events of history."""

import os

import httpx
import pytest
from contextstore_client import AsyncContextStore
from contextstore_client.adapters.langgraph import ContextStoreSaver
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from framework_tests.counting import counting_client, filler, fresh_namespace


def checkpoint(values: dict, version: int) -> dict:
    cp = empty_checkpoint()
    cp["id"] = str(uuid6(clock_seq=-1))
    cp["channel_values"] = values
    cp["channel_versions"] = {k: version for k in values}
    return cp


@pytest.fixture(params=[10, 10_000], ids=["10-events", "10000-events"])
def saver(request):
    client, transport = counting_client()
    saver = ContextStoreSaver(client, namespace=fresh_namespace())
    # The thread's history: plain events beside the checkpoints, in the root namespace's thread.
    for start in range(0, request.param, 1000):
        batch = filler(min(1000, request.param - start), start)
        client.commit_agent_session(saver.app, "", "t1", events=batch, create=True)
    transport.count = 0
    yield saver, transport
    client.close()


def test_each_checkpointer_call_costs_one_request(saver):
    saver, transport = saver
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    for step in range(4):
        transport.count = 0
        config = saver.put(config, checkpoint({"messages": [f"m{step}"]}, step + 1),
                           {"source": "loop", "step": step}, {"messages": step + 1})
        assert transport.count == 1

    transport.count = 0
    saver.put_writes(config, [("messages", ["pending"])], "task-1")
    assert transport.count == 1

    transport.count = 0
    found = saver.get_tuple({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}})
    assert transport.count == 1  # the checkpoint event with the blobs it names
    assert found.checkpoint["channel_values"] == {"messages": ["m3"]}
    assert found.pending_writes == [("task-1", "messages", ["pending"])]

    transport.count = 0
    older = saver.get_tuple(found.parent_config)
    assert transport.count == 1
    assert older.checkpoint["channel_values"] == {"messages": ["m2"]} and older.pending_writes == []

    transport.count = 0
    listed = list(saver.list({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}, limit=3))
    assert transport.count == 1
    assert [t.metadata["step"] for t in listed] == [3, 2, 1]
    assert listed[0].pending_writes == found.pending_writes

    transport.count = 0
    every = list(saver.list({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}))
    assert transport.count == 1  # the events and all the namespace's blobs
    assert [t.metadata["step"] for t in every] == [3, 2, 1, 0]


class CountingAsyncTransport(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.count += 1
        return await super().handle_async_request(request)


async def test_aget_tuple_and_alist_cost_one_request():
    transport = CountingAsyncTransport()
    async with AsyncContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"],
                                 transport=transport) as client:
        saver = ContextStoreSaver(client, namespace=fresh_namespace())
        config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
        for step in range(3):
            config = await saver.aput(config, checkpoint({"messages": [f"m{step}"]}, step + 1),
                                      {"source": "loop", "step": step}, {"messages": step + 1})
        await saver.aput_writes(config, [("messages", ["pending"])], "task-1")
        transport.count = 0
        found = await saver.aget_tuple({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}})
        assert transport.count == 1
        assert found.checkpoint["channel_values"] == {"messages": ["m2"]}
        assert found.pending_writes == [("task-1", "messages", ["pending"])]
        transport.count = 0
        listed = [t async for t in saver.alist({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}},
                                               limit=2)]
        assert transport.count == 1
        assert [t.metadata["step"] for t in listed] == [2, 1]


def test_checkpoints_stored_before_blob_refs_still_read(saver):
    """A checkpoint event without data.blob_refs (as puts wrote before) reads its blobs in a
    second request, and reads the same as one with them."""
    saver, transport = saver
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    for step in range(3):
        plan, config = saver._put_commit(config, checkpoint({"messages": [f"m{step}"]}, step + 1),
                                         {"source": "loop", "step": step}, {"messages": step + 1})
        args, kwargs = plan.args, plan.commit_kwargs()
        if step < 2:  # the first two as an older client stored them
            del kwargs["events"][0]["data"]["blob_refs"]
        saver.client.commit_agent_session(*args, **kwargs)
    saver.put_writes(config, [("messages", ["pending"])], "task-1")
    newest_config = {"configurable": {**config["configurable"]}}
    newest = saver.get_tuple(config)
    transport.count = 0
    old = saver.get_tuple(newest.parent_config)
    assert transport.count == 2
    assert old.checkpoint["channel_values"] == {"messages": ["m1"]}
    assert old.parent_config["configurable"]["checkpoint_id"]
    transport.count = 0
    listed = list(saver.list(newest_config, limit=3))
    assert transport.count == 1  # the newest: its own config names it (client_id), blob_refs
    transport.count = 0
    listed = list(saver.list({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}, limit=3))
    assert transport.count == 2  # the two old ones' blobs apart
    assert [t.checkpoint["channel_values"] for t in listed] == [{"messages": [f"m{s}"]} for s in (2, 1, 0)]
    assert listed[0].pending_writes == [("task-1", "messages", ["pending"])]
    assert listed[0] == newest and listed[1] == old


def test_copy_prune_and_delete_for_runs_cost_one_request_each(saver):
    saver, transport = saver
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    for step in range(3):
        config = saver.put(config, checkpoint({"messages": [f"m{step}"]}, step + 1),
                           {"source": "loop", "step": step, "run_id": f"run-{step}"},
                           {"messages": step + 1})

    transport.count = 0
    saver.copy_thread("t1", "t2")
    assert transport.count == 1
    copied = list(saver.list({"configurable": {"thread_id": "t2", "checkpoint_ns": ""}}))
    assert [t.metadata["step"] for t in copied] == [2, 1, 0]

    transport.count = 0
    saver.delete_for_runs(["run-0"])  # in both threads
    assert transport.count == 1

    transport.count = 0
    saver.prune(["t1"], strategy="keep_latest")
    assert transport.count == 1
    kept = list(saver.list({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}))
    assert [t.metadata["step"] for t in kept] == [2]
    assert [t.metadata["step"] for t in saver.list(
        {"configurable": {"thread_id": "t2", "checkpoint_ns": ""}})] == [2, 1]


@pytest.mark.parametrize("named", [True, False], ids=["blob-refs", "stored-before-blob-refs"])
def test_a_long_list_fits_its_request_lines(saver, named):
    """A list of every checkpoint reads the namespace's blobs with its events, a long list
    with a limit the blobs its checkpoints name (data.blob_refs); checkpoints stored without
    them read theirs apart, in batches that fit gunicorn's 4,094-byte request line."""
    saver, transport = saver
    config = {"configurable": {"thread_id": "long", "checkpoint_ns": ""}}
    for step in range(40):
        plan, config = saver._put_commit(config, checkpoint({"messages": [f"m{step}"]}, step + 1),
                                         {"source": "loop", "step": step}, {"messages": step + 1})
        args, kwargs = plan.args, plan.commit_kwargs()
        if not named:
            del kwargs["events"][0]["data"]["blob_refs"]
        saver.client.commit_agent_session(*args, **kwargs)
    saver.put_writes(config, [("messages", ["pending"])], "task-1")
    transport.count = 0
    every = list(saver.list({"configurable": {"thread_id": "long", "checkpoint_ns": ""}}))
    assert transport.count == 1
    assert [t.checkpoint["channel_values"] for t in every] == [
        {"messages": [f"m{s}"]} for s in range(39, -1, -1)]
    transport.count = 0
    some = list(saver.list({"configurable": {"thread_id": "long", "checkpoint_ns": ""}}, limit=35))
    assert some == every[:35] and some[0].pending_writes == [("task-1", "messages", ["pending"])]
    if named:
        assert transport.count == 1  # the server reads the blobs the checkpoints name
    else:
        assert 2 < transport.count <= 8


def as_stored_before(kwargs: dict, new_versions: dict) -> dict:
    """A put's commit as the saver sent it before the metadata went into the checkpoint's blob
    and emptied channels stopped storing a blob: the checkpoint and its metadata two blobs
    (cp/<id>, md/<id>), an "empty" blob per emptied channel, both named in blob_refs."""
    event = kwargs["events"][-1]
    cid = event["client_id"]
    blobs = {b["key"]: b for b in kwargs["blobs"]}
    folded = blobs.pop(f"cp/{cid}")
    md_type, start = folded["meta"]["metadata"]
    old = [{"key": f"ch/{channel}/{version}", "data": b"", "content_type": "empty",
            "meta": {"channel": channel, "version": version}}
           if f"ch/{channel}/{version}" not in blobs else blobs[f"ch/{channel}/{version}"]
           for channel, version in new_versions.items()]
    old += [{"key": f"cp/{cid}", "data": folded["data"][:start], "content_type": folded["content_type"],
             "meta": {"checkpoint_id": cid}},
            {"key": f"md/{cid}", "data": folded["data"][start:], "content_type": md_type,
             "meta": {"checkpoint_id": cid}}]
    data = event["data"]
    data["new_channels"] = sorted(new_versions)
    data["blob_refs"]["keys"].insert(1, f"md/{cid}")
    return {**kwargs, "blobs": old}


def test_checkpoints_stored_with_their_metadata_apart_read_as_they_were_put():
    """Checkpoints stored before (metadata a blob of its own, emptied channels an "empty"
    blob) read back exactly as the same puts stored now: get_tuple, list, pending writes."""
    client, transport = counting_client()
    saver = ContextStoreSaver(client, namespace=fresh_namespace())
    configs = {t: {"configurable": {"thread_id": t, "checkpoint_ns": ""}} for t in ("before", "now")}
    steps = [({"messages": ["m0"], "topic": "x"}, {"messages": 1, "topic": 1}),
             ({"messages": ["m0", "m1"]}, {"messages": 2, "topic": 2}),  # topic emptied
             ({"messages": ["m0", "m1", "m2"], "topic": "y"}, {"messages": 3, "topic": 3})]
    for step, (values, new_versions) in enumerate(steps):
        cp = checkpoint(values, step + 1)
        cp["channel_versions"] = dict(new_versions)
        metadata = {"source": "loop", "step": step, "writes": {"node": {"n": step}}}
        plan, configs["before"] = saver._put_commit(configs["before"], cp, metadata, new_versions)
        client.commit_agent_session(*plan.args, **as_stored_before(plan.commit_kwargs(), new_versions))
        configs["now"] = saver.put(configs["now"], cp, metadata, new_versions)
        for thread in configs:
            saver.put_writes(configs[thread], [("messages", [f"w{step}"]), ("__error__", "boom")], "task-1")

    def read(thread: str) -> list:
        found = [saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}),
                 *saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}),
                 *saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}, limit=2)]
        return [repr(t).replace(f"'thread_id': '{thread}'", "'thread_id': ?") for t in found]

    stored = client.read_agent_session(saver.app, "", "before", blob_prefixes=["md/", "ch/topic/"])
    assert sorted(stored["blobs"]) == sorted([f"md/{e['client_id']}" for e in stored["events"]] + [
        "ch/topic/1", "ch/topic/2", "ch/topic/3"])  # as stored before: metadata apart, "empty"
    assert read("before") == read("now")
    newest = saver.get_tuple(configs["now"])
    assert newest.checkpoint["channel_values"] == {"messages": ["m0", "m1", "m2"], "topic": "y"}
    assert newest.metadata["writes"] == {"node": {"n": 2}} and newest.pending_writes == [
        ("task-1", "__error__", "boom"), ("task-1", "messages", ["w2"])]
    older = saver.get_tuple(newest.parent_config)
    assert older.checkpoint["channel_values"] == {"messages": ["m0", "m1"]}  # topic emptied
    assert "ch/topic/2" not in client.read_agent_session(saver.app, "", "now", blob_prefixes=["ch/"])["blobs"]
    client.close()
