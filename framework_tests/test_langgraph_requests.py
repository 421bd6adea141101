"""Requests per LangGraph checkpointer call, at 10 and at 10,000 events of history."""

import pytest
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


def test_each_checkpointer_call_costs_one_or_two_requests(saver):
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
    assert transport.count <= 2
    assert found.checkpoint["channel_values"] == {"messages": ["m3"]}
    assert found.pending_writes == [("task-1", "messages", ["pending"])]

    transport.count = 0
    listed = list(saver.list({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}, limit=3))
    assert transport.count <= 2
    assert [t.metadata["step"] for t in listed] == [3, 2, 1]


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


def test_a_long_list_fits_its_request_lines(saver):
    """Blob keys go in a GET's query: a list of every checkpoint reads the namespace's blobs in
    one request, a long list with a limit in batches that fit gunicorn's 4,094-byte line."""
    saver, transport = saver
    config = {"configurable": {"thread_id": "long", "checkpoint_ns": ""}}
    for step in range(40):
        config = saver.put(config, checkpoint({"messages": [f"m{step}"]}, step + 1),
                           {"source": "loop", "step": step}, {"messages": step + 1})
    transport.count = 0
    every = list(saver.list({"configurable": {"thread_id": "long", "checkpoint_ns": ""}}))
    assert transport.count == 2
    assert [t.checkpoint["channel_values"] for t in every] == [
        {"messages": [f"m{s}"]} for s in range(39, -1, -1)]
    transport.count = 0
    some = list(saver.list({"configurable": {"thread_id": "long", "checkpoint_ns": ""}}, limit=35))
    assert [t.metadata["step"] for t in some] == list(range(39, 4, -1))
    assert 2 < transport.count <= 8
