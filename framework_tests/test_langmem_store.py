"""LangMem's memory tools (langmem 0.0.30) over ContextStoreStore, inside a LangGraph graph: the
tools find the store through the graph (compile(store=...)), as an agent's would. The model is
scripted (its tool calls written here), so the test needs no provider; everything else is
LangMem's and LangGraph's own code."""

import json
import os
import uuid

from contextstore_client import ContextStore
from contextstore_client.adapters.langgraph import ContextStoreStore
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langmem import create_manage_memory_tool, create_search_memory_tool

from framework_tests.embed_utils import CharacterEmbeddings


def scripted_agent(calls: list[dict]):
    """A node that answers each turn with the next scripted tool call, then stops."""
    turns = iter(calls)

    def agent(state: MessagesState) -> dict:
        call = next(turns, None)
        if call is None:
            return {"messages": [AIMessage(content="done")]}
        return {"messages": [AIMessage(content="", tool_calls=[{**call, "id": uuid.uuid4().hex}])]}

    return agent


def graph_with(store, tools, calls):
    builder = StateGraph(MessagesState)
    builder.add_node("agent", scripted_agent(calls))
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", lambda s: "tools" if s["messages"][-1].tool_calls else END)
    builder.add_edge("tools", "agent")
    return builder.compile(store=store)


def test_langmem_tools_remember_update_and_recall_through_contextstore() -> None:
    client = ContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"])
    embeddings = CharacterEmbeddings(dims=64)
    prefix = f"langmem-{uuid.uuid4().hex[:8]}"
    store = ContextStoreStore(client, namespace=prefix,
                              index={"dims": 64, "embed": embeddings, "fields": ["content"]})
    tools = [create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}")),
             create_search_memory_tool(namespace=("memories", "{langgraph_user_id}"))]
    config = {"configurable": {"langgraph_user_id": "ann"}}
    graph = graph_with(store, tools, [
        {"name": "manage_memory", "args": {"action": "create", "content": "Ann is vegetarian"}},
        {"name": "manage_memory", "args": {"action": "create", "content": "Ann flies to Oslo in May"}},
    ])
    graph.invoke({"messages": [HumanMessage("remember this")]}, config)
    items = client.store_search([prefix, "memories", "ann"], limit=10)
    assert sorted(i["value"]["content"] for i in items) == ["Ann flies to Oslo in May", "Ann is vegetarian"]
    diet = next(i for i in items if i["value"]["content"] == "Ann is vegetarian")

    graph = graph_with(store, tools, [
        {"name": "manage_memory", "args": {"action": "update", "id": diet["key"],
                                           "content": "Ann is vegan"}},
        {"name": "search_memory", "args": {"query": "Ann is vegan", "limit": 1}},
    ])
    result = graph.invoke({"messages": [HumanMessage("she is vegan now")]}, config)
    found = json.loads(result["messages"][-2].content)  # the search tool's answer
    assert [m["value"]["content"] for m in found] == ["Ann is vegan"]
    assert found[0]["key"] == diet["key"] and found[0]["score"] > 0.9
    updated = client.store_get([prefix, "memories", "ann"], diet["key"])
    assert (updated["value"]["content"], updated["version"]) == ("Ann is vegan", 2)
    # the user id of the config filled LangMem's namespace template: one namespace, ann's
    assert client.store_list_namespaces(prefix=[prefix]) == [[prefix, "memories", "ann"]]
    client.close()
