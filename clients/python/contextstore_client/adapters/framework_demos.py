"""Offline demos of the LangGraph, ADK and OpenAI Agents SDK adapters (scripted models, no
network but contextstore's). Each framework lives in its own virtualenv, so each demo runs
inside it:

    .venv-langgraph/bin/python -m contextstore_client.adapters.framework_demos langgraph \\
        --url http://127.0.0.1:8000 --token cs_... [--key demo-langgraph-1]

(``manage.py demo_frameworks`` does this for every framework whose venv exists.)
Prints one line: where the session is and what happened.
"""

from __future__ import annotations

import argparse
import asyncio
import operator
import sys
import time
from typing import Annotated, Any, TypedDict

from contextstore_client import ContextStore


def demo_langgraph(cs: ContextStore, key: str) -> str:
    """A refund graph whose approval subgraph interrupt()s for a person, then resumes."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt

    from contextstore_client.adapters.langgraph import ContextStoreSaver

    class State(TypedDict):
        messages: Annotated[list[str], operator.add]
        approved: bool

    def ask(state: State) -> dict[str, Any]:
        answer = interrupt({"question": "Approve a refund of 30 EUR for order 42?"})
        return {"approved": answer == "yes", "messages": [f"approver said {answer}"]}

    approval = StateGraph(State).add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END).compile()

    def plan(state: State) -> dict[str, Any]:
        return {"messages": ["plan: refund order 42 (30 EUR), needs approval"]}

    def act(state: State) -> dict[str, Any]:
        return {"messages": ["refund sent" if state["approved"] else "refund declined"]}

    graph = (StateGraph(State).add_node("plan", plan).add_node("approval", approval).add_node("act", act)
             .add_edge(START, "plan").add_edge("plan", "approval").add_edge("approval", "act")
             .add_edge("act", END).compile(checkpointer=ContextStoreSaver(cs)))
    config = {"configurable": {"thread_id": key}}
    first = graph.invoke({"messages": ["user: please refund order 42"], "approved": False}, config)
    question = first["__interrupt__"][0].value["question"]
    final = graph.invoke(Command(resume="yes"), config)
    history = len(list(graph.get_state_history(config)))
    return f"interrupted ({question!r}), resumed: {final['messages'][-1]}; {history} checkpoints"


def demo_adk(cs: ContextStore, key: str) -> str:
    """An ADK agent that calls a tool, answers and keeps app/user/session state."""
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.genai import types

    from contextstore_client.adapters.adk import ContextStoreSessionService

    class ScriptedLlm(BaseLlm):
        model: str = "scripted"
        script: list[Any] = []

        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            yield self.script.pop(0)

    def lookup_order(order_id: str) -> dict[str, str]:
        """Look up an order's status."""
        return {"order_id": order_id, "status": "shipped"}

    call = types.Part(function_call=types.FunctionCall(id="call-1", name="lookup_order",
                                                       args={"order_id": "42"}))
    llm = ScriptedLlm(script=[
        LlmResponse(content=types.Content(role="model", parts=[
            types.Part(text="The user asks about order 42; look it up.", thought=True), call])),
        LlmResponse(content=types.Content(role="model", parts=[types.Part(text="Order 42 has shipped.")])),
    ])
    agent = LlmAgent(name="helper", model=llm, tools=[lookup_order], instruction="Help with orders.",
                     output_key="last_answer")
    service = ContextStoreSessionService(cs)

    async def run() -> str:
        session = await service.create_session(
            app_name="demo-shop", user_id="ann", session_id=key,
            state={"app:support_hours": "9-17", "user:tier": "gold", "topic": "orders"})
        runner = Runner(app_name="demo-shop", agent=agent, session_service=service)
        message = types.Content(role="user", parts=[types.Part(text="Where is my order 42?")])
        answers = [e.content.parts[0].text async for e in runner.run_async(
            user_id="ann", session_id=session.id, new_message=message)
            if e.content and e.content.parts and e.content.parts[0].text and not e.content.parts[0].thought]
        stored = await service.get_session(app_name="demo-shop", user_id="ann", session_id=key)
        assert stored is not None  # created above
        return f"{answers[-1]!r}; {len(stored.events)} events, state {sorted(stored.state)}"

    return asyncio.run(run())


def demo_openai_agents(cs: ContextStore, key: str) -> str:
    """An OpenAI agent with a tool, two turns remembered through the session."""
    from agents import Agent, Runner, function_tool
    from agents.testing import ScriptedModel
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    from contextstore_client.adapters.openai_agents import ContextStoreSession

    def text(message: str, item_id: str) -> ResponseOutputMessage:
        return ResponseOutputMessage(id=item_id, type="message", role="assistant", status="completed",
                                     content=[ResponseOutputText(text=message, type="output_text",
                                                                 annotations=[])])

    @function_tool
    def lookup_order(order_id: str) -> str:
        """Look up an order's status."""
        return f"order {order_id}: shipped"

    model = ScriptedModel([
        [ResponseFunctionToolCall(id="fc_1", call_id="call_1", type="function_call", name="lookup_order",
                                  arguments='{"order_id": "42"}')],
        [text("Order 42 has shipped.", "msg_1")],
        [text("You asked about order 42.", "msg_2")],
    ])
    agent = Agent(name="helper", model=model, tools=[lookup_order], instructions="Help with orders.")
    session = ContextStoreSession(key, cs)

    async def run() -> str:
        await Runner.run(agent, "Where is my order 42?", session=session)
        second = await Runner.run(agent, "What did I ask about?", session=session)
        items = await session.get_items()
        return f"{second.final_output!r}; {len(items)} items in the session"

    return asyncio.run(run())


DEMOS = {"langgraph": demo_langgraph, "adk": demo_adk, "openai-agents": demo_openai_agents}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", choices=sorted(DEMOS))
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--token", required=True)
    parser.add_argument("--key", default="")
    args = parser.parse_args(argv)
    key = args.key or f"demo-{args.framework}-{time.strftime('%Y%m%d-%H%M%S')}"
    with ContextStore(args.url, args.token) as cs:
        print(f"{args.framework}: session {key}: {DEMOS[args.framework](cs, key)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
