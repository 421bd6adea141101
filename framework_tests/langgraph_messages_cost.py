"""What recording the messages channel costs a LangGraph put: the same puts of a checkpoint whose
messages channel holds 50 LangChain messages (user questions, AI tool calls, tool results,
answers), with ContextStoreSaver recording them (messages_channel="messages") and without
(None), in alternating turns against the server named by CONTEXTSTORE_URL / CONTEXTSTORE_TOKEN.

    python -m framework_tests.langgraph_messages_cost [puts]      (inside .venv-langgraph)

"steady": each put adds 2 messages to a thread whose other 48 are recorded (a turn);
"first": all 50 are new to the thread (a fresh thread each put: the most a put sends);
"client": the client-side work of one steady put alone (no request), in microseconds.
"""

import os
import statistics
import sys
import time
import uuid
from typing import Any

from contextstore_client import ContextStore
from contextstore_client.adapters.langgraph import ContextStoreSaver
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

TEXT = "The forecast for the coming days is mild with some rain in the afternoon. " * 3


def conversation(n: int, tag: str) -> list[BaseMessage]:
    """n messages: question, tool call, tool result, answer, over and over."""
    out: list[BaseMessage] = []
    for i in range(n):
        turn, kind = divmod(i, 4)
        mid = f"{tag}-{i}"
        if kind == 0:
            out.append(HumanMessage(f"Question {turn}: what is the weather in city {turn}?", id=mid))
        elif kind == 1:
            out.append(AIMessage("", id=mid, tool_calls=[
                {"name": "weather", "args": {"city": f"city {turn}"}, "id": f"call-{tag}-{turn}"}]))
        elif kind == 2:
            out.append(ToolMessage(TEXT, id=mid, tool_call_id=f"call-{tag}-{turn}"))
        else:
            out.append(AIMessage(f"Answer {turn}: {TEXT}", id=mid,
                                 response_metadata={"model_name": "gpt-test"},
                                 usage_metadata={"input_tokens": 900, "output_tokens": 60,
                                                 "total_tokens": 960}))
    return out


def checkpoint(messages: list[BaseMessage], version: int) -> Any:
    cp = empty_checkpoint()
    cp["id"] = str(uuid6(clock_seq=-1))
    cp["channel_values"] = {"messages": messages}
    cp["channel_versions"] = {"messages": version}
    return cp


def main(puts: int) -> None:
    client = ContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"])
    tag = uuid.uuid4().hex[:8]
    savers = {"off": ContextStoreSaver(client, namespace=f"off{tag}", messages_channel=None),
              "on": ContextStoreSaver(client, namespace=f"on{tag}")}
    times: dict[str, dict[str, list[float]]] = {case: {"off": [], "on": []} for case in ("steady", "first")}
    configs = {side: {"configurable": {"thread_id": "steady", "checkpoint_ns": ""}} for side in savers}
    history = conversation(48, f"s{tag}")
    for side, saver in savers.items():  # the thread's first 48 messages, recorded
        configs[side] = saver.put(configs[side], checkpoint(history, 1), {"source": "loop", "step": 0},
                                  {"messages": 1})
    for i in range(puts):
        new = conversation(50, f"s{tag}-{i}")[48:]
        messages = history + new
        for side in (("off", "on") if i % 2 else ("on", "off")):
            saver = savers[side]
            began = time.perf_counter()
            configs[side] = saver.put(configs[side], checkpoint(messages, i + 2),
                                      {"source": "loop", "step": i + 1}, {"messages": i + 2})
            times["steady"][side].append(time.perf_counter() - began)
            fresh = {"configurable": {"thread_id": f"first-{i}", "checkpoint_ns": ""}}
            began = time.perf_counter()
            saver.put(fresh, checkpoint(conversation(50, f"f{tag}-{i}"), 1), {"source": "loop", "step": 0},
                      {"messages": 1})
            times["first"][side].append(time.perf_counter() - began)
    for case, sides in times.items():
        off, on = statistics.median(sides["off"]) * 1000, statistics.median(sides["on"]) * 1000
        print(f"{case}: median put {off:.2f} ms without messages, {on:.2f} ms with "
              f"(+{on - off:.2f} ms, +{(on / off - 1) * 100:.0f} %), {puts} puts each")
    # The client's own work for a steady put: building the commit (serde, events), no request.
    saver = savers["on"]
    key = ("steady", "", "")
    messages = history + conversation(50, f"c{tag}")[48:]
    spent = {}
    for side, channel in (("off", None), ("on", "messages")):
        saver.messages_channel = channel
        began = time.perf_counter()
        for _ in range(200):
            saver._put_commit(configs["on"], checkpoint(messages, 1), {"source": "loop", "step": 1},
                              {"messages": 1})
        spent[side] = (time.perf_counter() - began) / 200 * 1e6
    print(f"client: building a steady put {spent['off']:.0f} µs without messages, {spent['on']:.0f} µs with "
          f"({len(saver._known[key])} ids known)")
    client.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
