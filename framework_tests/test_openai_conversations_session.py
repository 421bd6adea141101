"""The Agents SDK's own OpenAIConversationsSession and the async `openai` SDK, unmodified, against
contextstore's OpenAI Conversations API (CONTEXTSTORE_URL + /openai/v1, the API token as the key):
a Runner turn with tool calls kept as conversation items, the session contract (get_items,
get_items(limit), add_items past 20 items, pop_item, clear_session), pagination and errors."""

import os
import uuid

import openai
import pytest
from agents import Agent, ModelResponse, Runner, Usage, function_tool
from agents.memory.openai_conversations_session import OpenAIConversationsSession
from agents.models.interface import Model
from openai import AsyncOpenAI
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText


def client() -> AsyncOpenAI:
    return AsyncOpenAI(base_url=os.environ["CONTEXTSTORE_URL"].rstrip("/") + "/openai/v1",
                       api_key=os.environ["CONTEXTSTORE_TOKEN"], max_retries=0)


def text(value: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id=f"msg_{uuid.uuid4().hex}", type="message", role="assistant",
                                 status="completed",
                                 content=[ResponseOutputText(type="output_text", text=value, annotations=[])])


class ScriptedModel(Model):
    """Calls weather for Paris, then answers from the result (ids unique, as a model's are)."""

    async def get_response(self, system_instructions, input, *args, **kwargs) -> ModelResponse:
        answered = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in input)
        if answered:
            output = [text("It is 18C, cloudy in Paris.")]
        else:
            output = [text("Let me look."),
                      ResponseFunctionToolCall(id=f"fc_{uuid.uuid4().hex}", type="function_call",
                                               call_id=f"call_{uuid.uuid4().hex}", name="weather",
                                               arguments='{"city": "Paris"}')]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"18C, cloudy in {city}"


def said(item: dict) -> str:
    return item["content"][0]["text"]


def without_ids(items: list[dict]) -> list[dict]:
    return [{k: v for k, v in item.items() if k != "id"} for item in items]


async def test_a_runner_turn_is_kept_in_an_openai_conversations_session():
    session = OpenAIConversationsSession(openai_client=client())
    agent = Agent(name="helper", instructions="Be brief.", model=ScriptedModel(), tools=[weather])
    result = await Runner.run(agent, "Weather in Paris?", session=session)
    assert result.final_output == "It is 18C, cloudy in Paris."
    assert session.session_id.startswith("conv_")

    items = await session.get_items()
    # A message sent with a string reads with it as a text part, as OpenAI lists it.
    added = [{"type": "message", "content": [{"type": "input_text", "text": "Weather in Paris?"}],
              "role": "user"}] + [
        item.to_input_item() for item in result.new_items]
    assert without_ids(items) == without_ids(added)
    # The SDK sends the model's items without their ids: each gets its own, as OpenAI's would.
    ids = [item["id"] for item in items]
    assert len(set(ids)) == len(ids) and all(i.split("_")[0] in ("msg", "fc", "fco") for i in ids)

    # A second turn reads the first back from the conversation and adds to it.
    second = await Runner.run(agent, "And tomorrow?", session=session)
    assert second.final_output == "It is 18C, cloudy in Paris."
    newest = await session.get_items(limit=2)
    assert said(newest[0]) == "And tomorrow?" and newest[1]["role"] == "assistant"
    assert len(await session.get_items()) == len(items) + 2


async def test_the_session_contract():
    session = OpenAIConversationsSession(openai_client=client())
    assert await session.get_items() == []
    items = [{"role": "user", "content": f"m{n}"} for n in range(45)]
    await session.add_items(items)  # three requests of at most 20
    got = await session.get_items()
    assert [said(i) for i in got] == [f"m{n}" for n in range(45)]
    assert [said(i) for i in await session.get_items(limit=3)] == ["m42", "m43", "m44"]
    popped = await session.pop_item()
    assert said(popped) == "m44" and popped["id"] == got[-1]["id"]
    assert [said(i) for i in await session.get_items(limit=1)] == ["m43"]
    old = session.session_id
    await session.clear_session()
    with pytest.raises(openai.NotFoundError):
        await client().conversations.retrieve(old)
    assert await session.get_items() == []
    assert session.session_id != old


async def test_the_async_sdk_pages_and_raises_its_own_errors():
    api = client()
    conversation = await api.conversations.create(metadata={"topic": "paging"})
    await api.conversations.items.create(conversation.id, items=[
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"t{n}"}]}
        for n in range(12)])
    seen = [item.content[0].text async for item in api.conversations.items.list(conversation.id, limit=5)]
    assert seen == [f"t{n}" for n in reversed(range(12))]
    first = await api.conversations.items.list(conversation.id, order="asc", limit=4)
    later = await api.conversations.items.list(conversation.id, order="asc", limit=4, after=first.last_id)
    assert [i.content[0].text for i in later.data] == ["t4", "t5", "t6", "t7"] and later.has_more
    with pytest.raises(openai.BadRequestError):
        await api.conversations.items.list(conversation.id, limit=0)
    with pytest.raises(openai.NotFoundError):
        await api.conversations.items.retrieve("msg_missing", conversation_id=conversation.id)
    bad = AsyncOpenAI(base_url=str(api.base_url), api_key="cs_wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        await bad.conversations.retrieve(conversation.id)
    assert (await api.conversations.delete(conversation.id)).deleted
