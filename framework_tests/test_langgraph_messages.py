"""A LangGraph conversation reads as one: a real graph (a scripted chat model that calls a tool,
LangGraph's ToolNode) run through ContextStoreSaver records its messages channel as events,
each message once, in the checkpoint's own commit, and GET /context/ pairs calls with results."""

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from contextstore_client import AsyncContextStore, ContextStore, InvalidInput
from contextstore_client.adapters.langgraph import MESSAGE_TYPES, ContextStoreSaver, message_event
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from framework_tests.counting import counting_client, fresh_namespace


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"18C, cloudy in {city}"


class ScriptedModel(BaseChatModel):
    """A chat model that calls the weather tool for a question it has no tool answer to, and
    then answers from the tool's result (as a real model would, deterministically)."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedModel":
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.calls += 1
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"It is {last.content}.", id=f"ai-{self.calls}",
                              response_metadata={"model_name": "scripted-1"})
        else:
            city = str(last.content).rsplit(" ", 1)[-1].strip("?")
            reply = AIMessage(content="Let me look.", id=f"ai-{self.calls}", tool_calls=[
                {"name": "weather", "args": {"city": city}, "id": f"call-{self.calls}"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def build_graph(saver: ContextStoreSaver, model: ScriptedModel) -> Any:
    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([weather]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver)


@pytest.fixture
def client() -> Iterator[ContextStore]:
    with ContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"]) as c:
        yield c


def recorded(client: ContextStore, saver: ContextStoreSaver, thread_id: str) -> list[dict[str, Any]]:
    read = client.read_agent_session(saver.app, "", thread_id, types=list(MESSAGE_TYPES))
    return read["events"] if read else []


def shape(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(e["type"], e["role"], e["content"]) for e in events]


def ask(graph: Any, thread_id: str, *messages: BaseMessage, run_id: str = "") -> dict[str, Any]:
    # A run id reaches checkpoint metadata through the config's metadata (as LangGraph's server sets it).
    return graph.invoke({"messages": list(messages)}, {"configurable": {"thread_id": thread_id},
                                                       "metadata": {"run_id": run_id} if run_id else {}})


def test_a_graph_with_a_tool_call_reads_as_a_conversation(client):
    saver = ContextStoreSaver(client, namespace=fresh_namespace())
    graph = build_graph(saver, ScriptedModel())
    run = str(uuid.uuid4())
    out = ask(graph, "t1", SystemMessage("Be brief.", id="sys"), HumanMessage("Weather in Paris?", id="h1"),
              run_id=run)

    events = recorded(client, saver, "t1")
    assert shape(events) == [
        ("Message", "system", "Be brief."),
        ("Message", "user", "Weather in Paris?"),
        ("ToolCall", "assistant", "Let me look."),
        ("ToolResult", "tool", "18C, cloudy in Paris"),
        ("LLMOutput", "assistant", "It is 18C, cloudy in Paris."),
    ]
    assert [e["client_id"] for e in events] == [m.id for m in out["messages"]]
    call, result, answer = events[2], events[3], events[4]
    assert call["data"]["tool_calls"] == [{"id": "call-1", "name": "weather", "arguments": {"city": "Paris"}}]
    assert call["call_id"] == result["call_id"] == result["data"]["tool_call_id"] == "call-1"
    assert answer["data"]["model"] == "scripted-1"
    assert {e["run_id"] for e in events} == {run}

    # The checkpoint holds LangGraph's own objects, as they were.
    assert graph.get_state({"configurable": {"thread_id": "t1"}}).values["messages"] == out["messages"]

    thread = client.get_thread(client.read_agent_session(saver.app, "", "t1", limit=0)["thread"])
    openai = thread.context(format="openai", record=False).messages
    assert openai == [
        {"role": "user", "content": "Weather in Paris?"},  # a render opens with a user turn
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "call-1", "type": "function",
             "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call-1", "content": "18C, cloudy in Paris"},
        {"role": "assistant", "content": "It is 18C, cloudy in Paris."},
    ]
    anthropic = thread.context(format="anthropic", record=False).messages
    assert anthropic[1]["content"][1] == {"type": "tool_use", "id": "call-1", "name": "weather",
                                          "input": {"city": "Paris"}}
    assert anthropic[2]["content"] == [{"type": "tool_result", "tool_use_id": "call-1",
                                        "content": "18C, cloudy in Paris"}]
    assert [e.content for e in thread.events(q="cloudy in Paris")][:1] == ["18C, cloudy in Paris"]


def test_each_message_is_recorded_once_over_turns_and_processes(client):
    namespace = fresh_namespace()
    saver = ContextStoreSaver(client, namespace=namespace)
    graph = build_graph(saver, ScriptedModel())
    ask(graph, "t1", HumanMessage("Weather in Paris?"))
    ask(graph, "t1", HumanMessage("Weather in Oslo?"))
    # Another process (a saver that has seen nothing) goes on with the same conversation.
    other = build_graph(ContextStoreSaver(client, namespace=namespace), ScriptedModel(calls=10))
    out = ask(other, "t1", HumanMessage("Weather in Rome?"))

    events = recorded(client, saver, "t1")
    assert len(out["messages"]) == 12
    assert [e["client_id"] for e in events] == [m.id for m in out["messages"]]
    assert [e["content"] for e in events if e["type"] == "ToolResult"] == [
        "18C, cloudy in Paris", "18C, cloudy in Oslo", "18C, cloudy in Rome"]


def test_recording_messages_costs_no_request():
    counts = {}
    for channel in ("messages", None):
        client, transport = counting_client()
        saver = ContextStoreSaver(client, namespace=fresh_namespace(), messages_channel=channel)
        graph = build_graph(saver, ScriptedModel())
        ask(graph, "t1", HumanMessage("Weather in Paris?"))
        ask(graph, "t1", HumanMessage("Weather in Oslo?"))
        graph.update_state({"configurable": {"thread_id": "t1"}},
                           {"messages": [HumanMessage("and tomorrow?", id="h2")]})
        counts[channel] = transport.count
        assert len(recorded(client, saver, "t1")) == (9 if channel else 0)
        client.close()
    assert counts["messages"] == counts[None]


def test_time_travel_and_edits_record_each_message_once_in_first_seen_order(client):
    namespace = fresh_namespace()
    saver = ContextStoreSaver(client, namespace=namespace)
    graph = build_graph(saver, ScriptedModel())
    ask(graph, "t1", HumanMessage("Weather in Paris?", id="h1"))
    config = {"configurable": {"thread_id": "t1"}}
    history = list(graph.get_state_history(config))
    first = next(s for s in history if len(s.values.get("messages", [])) == 1)  # before the model ran

    # Replay from the earlier checkpoint: a second branch, whose model answers anew.
    graph.invoke(None, first.config)
    # A fork that rewrites history: the user's question edited in place (same id).
    fork = graph.update_state(first.config, {"messages": [HumanMessage("Weather in Oslo?", id="h1")]})
    graph.invoke(None, fork)
    # A removal: the checkpoint loses the message, the thread keeps it (a log).
    graph.update_state(config, {"messages": [RemoveMessage(id="h1")]})

    events = recorded(client, saver, "t1")
    ids = [e["client_id"] for e in events]
    assert len(ids) == len(set(ids))  # nothing twice
    # The first run, then the replay's branch, then the fork's: each message where first seen.
    assert [i for i in ids if not i.startswith("ai-")] == ["h1", ids[2], ids[5], ids[8]]
    assert ids == ["h1", "ai-1", ids[2], "ai-2", "ai-3", ids[5], "ai-4", "ai-5", ids[8], "ai-6"]
    assert [e["content"] for e in events if e["type"] == "ToolResult"] == [
        "18C, cloudy in Paris", "18C, cloudy in Paris", "18C, cloudy in Oslo"]
    assert events[0]["content"] == "Weather in Paris?"  # first seen wins: the edit is in the checkpoint
    assert graph.get_state(fork).values["messages"][0].content == "Weather in Oslo?"
    assert "h1" not in [m.id for m in graph.get_state(config).values["messages"]]

    # A saver that knows nothing (another process) puts the edit again: the put still succeeds.
    fresh = build_graph(ContextStoreSaver(client, namespace=namespace), ScriptedModel())
    fresh.update_state(first.config, {"messages": [HumanMessage("Weather in Rome?", id="h1")]})
    assert [e["client_id"] for e in recorded(client, saver, "t1")] == ids


def test_an_edited_message_a_fresh_saver_sends_costs_a_read_and_one_more_commit(client):
    namespace = fresh_namespace()
    saver = ContextStoreSaver(client, namespace=namespace)
    graph = build_graph(saver, ScriptedModel())
    ask(graph, "t1", HumanMessage("Weather in Paris?", id="h1"))
    first = next(s for s in graph.get_state_history({"configurable": {"thread_id": "t1"}})
                 if len(s.values.get("messages", [])) == 1)
    counting, transport = counting_client()
    fresh = ContextStoreSaver(counting, namespace=namespace)  # has read nothing: knows no message
    tuple_ = saver.get_tuple(first.config)
    edited = [HumanMessage("Weather in Rome?", id="h1"), HumanMessage("Now!", id="h9")]
    checkpoint = {**tuple_.checkpoint, "id": "1f0-edit", "channel_values": {"messages": edited},
                  "channel_versions": {**tuple_.checkpoint["channel_versions"], "messages": "99"}}
    fresh.put(first.config, checkpoint, {"source": "update", "step": 9}, {"messages": "99"})
    assert transport.count == 3  # the 409, the read of the recorded ids, the commit
    assert [e["content"] for e in recorded(client, saver, "t1")][-1] == "Now!"
    assert fresh.get_tuple({"configurable": {"thread_id": "t1", "checkpoint_ns": "",
                                             "checkpoint_id": "1f0-edit"}}).checkpoint["channel_values"][
        "messages"] == edited
    counting.close()


async def test_the_async_methods_record_the_conversation_too():
    async with AsyncContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"]) as aclient:
        saver = ContextStoreSaver(aclient, namespace=fresh_namespace())
        graph = build_graph(saver, ScriptedModel())
        await graph.ainvoke({"messages": [HumanMessage("Weather in Lima?")]},
                            {"configurable": {"thread_id": "t1"}})
        read = await aclient.read_agent_session(saver.app, "", "t1", types=list(MESSAGE_TYPES))
    assert [e["type"] for e in read["events"]] == ["Message", "ToolCall", "ToolResult", "LLMOutput"]


class RefusingStore(ContextStore):
    """A ContextStore whose commits of message events the server refuses (400 naming one)."""

    def __init__(self) -> None:
        super().__init__(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"])
        self.commits: list[list[str]] = []

    def commit_agent_session(self, *args: Any, **kwargs: Any) -> Any:
        events = kwargs.get("events") or []
        self.commits.append([e["type"] for e in events])
        if any(e.get("content") == "refused" for e in events):
            raise InvalidInput("events[0].content: refused", details={"events[0].content": "refused"})
        return super().commit_agent_session(*args, **kwargs)


def test_a_put_whose_messages_are_refused_still_stores_its_checkpoint_and_does_not_retry_them():
    store = RefusingStore()
    saver = ContextStoreSaver(store, namespace=fresh_namespace())
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    first = [HumanMessage("refused", id="h1"), AIMessage("fine", id="a1")]
    config = saver.put(config, checkpoint_of(first, 1), {"source": "loop", "step": 0}, {"messages": 1})
    assert store.commits == [["Message", "LLMOutput", "Checkpoint"], ["Checkpoint"]]
    assert saver.get_tuple(config).checkpoint["channel_values"]["messages"] == first
    saver.put(config, checkpoint_of([*first, HumanMessage("next", id="h2")], 2),
              {"source": "loop", "step": 1}, {"messages": 2})
    assert store.commits[2:] == [["Message", "Checkpoint"]]  # only the new message, once
    assert [e["content"] for e in recorded(store, saver, "t1")] == ["next"]
    store.close()


def checkpoint_of(messages: list[BaseMessage], version: int) -> Any:
    cp = empty_checkpoint()
    cp["id"] = str(uuid6(clock_seq=-1))
    cp["channel_values"] = {"messages": messages}
    cp["channel_versions"] = {"messages": version}
    return cp


def test_message_event_reads_content_blocks_reasoning_and_long_text():
    message = AIMessage(id="a1", content=[
        {"type": "thinking", "thinking": "The user wants rain.", "signature": "sig"},
        {"type": "text", "text": "Rain "}, {"type": "text", "text": "today."},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 5000}},
        {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Oslo"}}],
        tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}])
    event = message_event(message)
    assert event["type"] == "ToolCall" and event["content"] == "Rain today."
    assert event["parts"] == [{"type": "thinking", "thinking": "The user wants rain.", "signature": "sig"}]
    assert event["data"]["tool_calls"] == [{"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}]
    assert event["data"]["blocks"] == [{"type": "image_url", "omitted_chars": 5069}]
    long = message_event(ToolMessage("é" * 100_000, tool_call_id="c1", status="error"))
    assert long["type"] == "ToolResult" and len(long["content"].encode()) == 120_000
    assert long["data"]["content_chars"] == 100_000 and long["data"]["status"] == "error"
    assert message_event(RemoveMessage(id="a1")) is None
    system = message_event(SystemMessage("Be brief."))
    assert (system["type"], system["role"]) == ("Message", "system")


def test_a_subgraph_records_its_messages_in_its_own_thread_and_the_parent_once(client):
    saver = ContextStoreSaver(client, namespace=fresh_namespace())
    model = ScriptedModel()

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    inner = StateGraph(MessagesState)
    inner.add_node("agent", agent)
    inner.add_node("tools", ToolNode([weather]))
    inner.add_edge(START, "agent")
    inner.add_conditional_edges("agent", tools_condition)
    inner.add_edge("tools", "agent")
    outer = StateGraph(MessagesState)
    outer.add_node("helper", inner.compile())
    outer.add_edge(START, "helper")
    out = ask(outer.compile(checkpointer=saver), "t1", HumanMessage("Weather in Bern?", id="h1"))

    ids = [m.id for m in out["messages"]]
    assert [e["client_id"] for e in recorded(client, saver, "t1")] == ids
    session = client.read_agent_session(saver.app, "", "t1", limit=0)["id"]
    (inner_thread,) = [t.name for t in client.session_threads(session) if t.name.startswith("ns:helper:")]
    inner = client.read_agent_session(saver.app, "", "t1", thread=inner_thread, types=list(MESSAGE_TYPES))
    assert [e["client_id"] for e in inner["events"]] == ids  # the subgraph's own conversation
