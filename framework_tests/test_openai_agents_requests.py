"""Requests per OpenAI Agents SDK session call, at 10 and at 10,000 items of history."""

import pytest
from contextstore_client.adapters.openai_agents import ContextStoreSession

from framework_tests.counting import counting_client, fresh_namespace


@pytest.fixture(params=[10, 10_000], ids=["10-events", "10000-events"])
async def session(request):
    client, transport = counting_client()
    session = ContextStoreSession("conversation", client, namespace=fresh_namespace())
    history = [{"role": "user", "content": f"message {i}"} for i in range(request.param)]
    for start in range(0, len(history), 1000):
        await session.add_items(history[start:start + 1000])
    transport.count = 0
    yield session, transport, request.param
    client.close()


async def test_each_session_call_is_one_request(session):
    session, transport, size = session

    await session.add_items([{"role": "user", "content": "hi"},
                             {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                              "content": [{"type": "output_text", "text": "hello", "annotations": []}]}])
    assert transport.count == 1

    transport.count = 0
    items = await session.get_items(limit=2)
    assert transport.count == 1 and items[0] == {"role": "user", "content": "hi"}

    transport.count = 0
    assert (await session.pop_item())["id"] == "msg_1"
    assert transport.count == 1

    transport.count = 0
    everything = await session.get_items()
    assert transport.count == 1 and len(everything) == size + 1

    transport.count = 0
    await session.clear_session()
    assert transport.count == 1
    assert await session.get_items() == []
