"""What recording the messages channel costs a LangGraph put: the same puts of a checkpoint whose
messages channel holds 50 LangChain messages (user questions, AI tool calls, tool results,
answers), with ContextStoreSaver recording them (messages_channel="messages") and without
(None), against the server named by CONTEXTSTORE_URL / CONTEXTSTORE_TOKEN.

    python -m framework_tests.langgraph_messages_cost [puts] [server pid ...]   (in .venv-langgraph)

"steady": each put adds 2 messages to a thread whose other 48 are recorded (a turn);
"first": all 50 are new to the thread (a fresh thread each put: the most a put sends).
Each is timed in blocks, twice, off then on: wall time per put and, given the web server's
worker pids (`pgrep -P <gunicorn master>`), the CPU they spent per put (Linux /proc), which a
loaded machine disturbs less than wall time. "client": building one steady put's commit.
"""

import os
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


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def main(puts: int, pids: list[int]) -> None:
    client = ContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"])
    tag = uuid.uuid4().hex[:8]
    for rep in range(2):
        for side, channel in (("off", None), ("on", "messages")):
            saver = ContextStoreSaver(client, namespace=f"{side}{tag}{rep}", messages_channel=channel)
            history = conversation(48, f"s{tag}{rep}")  # the thread's first 48 messages, recorded
            config = saver.put({"configurable": {"thread_id": "steady", "checkpoint_ns": ""}},
                               checkpoint(history, 1), {"source": "loop", "step": 0}, {"messages": 1})
            for case in ("steady", "first"):
                cpu, began = cpu_seconds(pids), time.perf_counter()
                for i in range(puts):
                    if case == "steady":
                        new = conversation(50, f"s{tag}{rep}-{i}")[48:]
                        config = saver.put(config, checkpoint(history + new, i + 2),
                                           {"source": "loop", "step": i + 1}, {"messages": i + 2})
                    else:
                        saver.put({"configurable": {"thread_id": f"first-{i}", "checkpoint_ns": ""}},
                                  checkpoint(conversation(50, f"f{tag}{rep}-{i}"), 1),
                                  {"source": "loop", "step": 0}, {"messages": 1})
                wall = (time.perf_counter() - began) / puts * 1000
                spent = (cpu_seconds(pids) - cpu) / puts * 1000
                print(f"{case} {side}: wall {wall:.2f} ms/put"
                      + (f", server CPU {spent:.2f} ms/put" if pids else ""))
    saver = ContextStoreSaver(client, namespace=f"client{tag}")
    history = conversation(48, f"c{tag}")
    saver._remember(("steady", ""), [str(m.id) for m in history])
    config: Any = {"configurable": {"thread_id": "steady", "checkpoint_ns": "", "checkpoint_id": "x"}}
    messages = history + conversation(50, f"c{tag}")[48:]
    for side, channel in (("off", None), ("on", "messages")):
        saver.messages_channel = channel
        began = time.perf_counter()
        for _ in range(200):
            saver._put_commit(config, checkpoint(messages, 1), {"source": "loop", "step": 1}, {"messages": 1})
        print(f"client {side}: building a steady put {(time.perf_counter() - began) / 200 * 1e6:.0f} µs")
    client.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100, [int(p) for p in sys.argv[2:]])
