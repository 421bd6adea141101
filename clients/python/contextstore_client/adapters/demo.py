"""One small offline agent per framework, each kept in its own contextstore session.

Used by ``manage.py demo_frameworks``. The models are stand-ins that answer from their input, so
the demo needs no network and no API key; everything else is each framework's real code.
Call ``prepare_environment()`` before importing this module's runners: peteos and Nooa read
their settings when imported.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextstore_client import ContextStore

if TYPE_CHECKING:
    from nooa.unifiedllm.unifiedllm import LLMResponse


def prepare_environment() -> None:
    """Settings the frameworks read at import time, and an offline cl100k_base."""
    from contextstore_client.adapters.offline import use_offline_cl100k

    folder = Path(tempfile.gettempdir()) / "contextstore-demo"
    folder.mkdir(exist_ok=True)
    if "PETEOS_CONFIG" not in os.environ:
        config = folder / "peteos.json"
        config.write_text("{}")
        os.environ["PETEOS_CONFIG"] = str(config)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price list download
    use_offline_cl100k(folder / "tiktoken")


def peteos_demo(cs: ContextStore, key: str) -> str:
    from peteos.conversation.context import Context
    from peteos.conversation.message import ContentPart, Message
    from peteos.conversation.system_prompt_message import SystemPromptMessage

    from contextstore_client.adapters.peteos import load_context, save_context

    ctx = Context.create(SystemPromptMessage.create("You are a terse travel assistant."))
    ctx.append(Message.create("user", [ContentPart.create_text("Train or plane to Lyon?")]))
    ctx.append(Message.create("assistant", [
        ContentPart.create_thinking("Paris-Lyon is two hours by TGV; flying is slower door to door."),
        ContentPart.create_text("Train: about two hours, city centre to city centre."),
    ]))
    thread = cs.thread(key, agent="peteos demo")
    save_context(ctx, thread)
    loaded = load_context(thread)
    return f"{len(loaded.messages)} messages, {thread.total_tokens()} tokens"


def clientai_demo(cs: ContextStore, key: str) -> str:
    from clientai.agent import Agent, act, think

    from contextstore_client.adapters.clientai import persist

    class EchoClient:
        def generate_text(self, prompt: str, model: str | None = None, **kwargs: object) -> str:
            return f"(model) {prompt.splitlines()[0][:60]}"

    class Helper(Agent):
        @think("analyze")
        def analyze(self, question: str) -> str:
            return f"Analyze: {question}"

        @act("respond")
        def respond(self, analysis: str) -> str:
            return f"Answer from: {analysis}"

    agent = Helper(client=EchoClient(), default_model="offline")
    persist(agent, cs.thread(key, user_id="ann", agent="clientai demo"))
    for question in ("What is Python?", "And what is Django?"):
        agent.run(question)
    return f"{len(agent.context.conversation_history)} interaction(s) in history"


def agentscope_demo(cs: ContextStore, key: str) -> str:
    from agentscope.agent import Agent
    from agentscope.formatter import OpenAIChatFormatter
    from agentscope.message import Msg, TextBlock, UserMsg
    from agentscope.model import ChatModelBase
    from agentscope.model._model_response import ChatResponse
    from agentscope.state import Task
    from pydantic import BaseModel

    from contextstore_client.adapters.agentscope import ContextStoreStateStore

    class EchoModel(ChatModelBase):
        class Parameters(BaseModel):
            pass

        def __init__(self) -> None:
            super().__init__(credential=None, model="offline", parameters=self.Parameters(),
                             stream=False)
            self.formatter = OpenAIChatFormatter()

        async def _call_api(self, model_name: str, messages: list[Msg], tools: Any = None,
                            tool_choice: Any = None, **kwargs: Any) -> ChatResponse:
            said = [m.get_text_content() for m in messages if m.role == "user"]
            return ChatResponse(content=[TextBlock(type="text", text=f"Noted: {said[-1]}")],
                                is_last=True)

    store = ContextStoreStateStore(cs, agent="agentscope demo")
    for text in ("Plan a release.", "Add a changelog task."):
        state = store.load("bob", key)
        if not state.tasks_context.tasks:
            state.tasks_context.tasks.append(
                Task(subject="release", description="Ship version 1", metadata={}))
        agent = Agent(name="planner", system_prompt="Plan briefly.", model=EchoModel(),
                      state=state)
        asyncio.run(agent.reply(UserMsg("bob", text)))
        store.save(agent.state, "bob", key)
    return f"{len(store.load('bob', key).context)} messages, tasks kept in state"


def agent_framework_demo(cs: ContextStore, key: str) -> str:
    from agent_framework import Agent, BaseChatClient, ChatResponse, Message

    from contextstore_client.adapters.agent_framework import (
        ContextStoreHistoryProvider,
        ContextStoreSessionStore,
        UserInfoMemory,
    )

    class ScriptedClient(BaseChatClient):
        async def _inner_get_response(self, *, messages: Sequence[Message], stream: bool,
                                      options: dict[str, Any], **kwargs: Any) -> ChatResponse:
            if options.get("response_format") is not None:  # UserInfoMemory's extraction
                said = " ".join(m.text for m in messages if str(m.role) == "user")
                name = re.search(r"[Mm]y name is (\w+)", said)
                age = re.search(r"(\d+) years old", said)
                text = json.dumps({"name": name and name.group(1),
                                   "age": age and int(age.group(1))})
            else:
                text = f"(model, told: {options.get('instructions', '')[:80]}…)"
            return ChatResponse(messages=[Message(role="assistant", contents=[text])],
                                response_format=options.get("response_format"))

    async def run() -> str:
        client = ScriptedClient()
        agent = Agent(client=client, instructions="You are a friendly assistant.",
                      context_providers=[ContextStoreHistoryProvider(cs, user_id=key),
                                         UserInfoMemory(cs, client, user_id=key)])
        sessions = ContextStoreSessionStore(cs, user_id=key)
        session = await sessions.get(key) or agent.create_session(session_id=key)
        for text in ("Hello, what is the square root of 9?", "My name is Ruaidhri",
                     "I am 20 years old"):
            await agent.run(text, session=session)
        await sessions.set(key, session)
        return ", ".join(m.content for m in cs.recall(user_id=key))

    return asyncio.run(run())


def nooa_run_code(source: str, call: int) -> LLMResponse:
    """What a model answers when it decides to run `source` in Nooa's code tool (offline
    scripted LLM responses for FakeLLMClient)."""
    from nooa.unifiedllm.unifiedllm import LLMResponse, ToolCall

    arguments = json.dumps({"code": source})
    return LLMResponse(
        raw_response=None, content="", finish_reason="tool_calls", reasoning=None,
        tool_calls=[ToolCall(id=f"call-{call}", name="execute_python", arguments=arguments)],
        assistant_message={"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call-{call}", "type": "function",
            "function": {"name": "execute_python", "arguments": arguments}}]},
        usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})


def nooa_demo(cs: ContextStore, key: str) -> str:
    from nooa import Agent
    from nooa.unifiedllm.fake import FakeLLMClient

    from contextstore_client.adapters.nooa import ContextStoreStorage

    run_code = nooa_run_code

    class Counter(Agent):
        count: int = 0

        async def bump(self, n: int) -> int:  # type: ignore[empty-body]  # Nooa has the model carry it out
            """Add n to count and return the new count."""
            ...

    storage = ContextStoreStorage(cs.thread(key, agent="nooa demo"))
    llm = FakeLLMClient(scripted_responses=[
        run_code("self.count += n\nreturn_result(self.count)", i) for i in range(2)])
    agent = Counter(llm=llm, storage=storage, context={"rules": "Count exactly."})
    asyncio.run(agent.bump(2))
    asyncio.run(agent.bump(3))
    tags = agent.event_manager._backend.active_tags()
    agent.event_manager.collapse(tags[0], tags[len(tags) // 2], "Counted to 2.")
    storage.save_snapshot(agent)
    return f"count {agent.count}, {len(storage.event_backend)} events"


DEMOS: dict[str, Callable[[ContextStore, str], str]] = {
    "peteos": peteos_demo, "clientai": clientai_demo, "agentscope": agentscope_demo,
    "agent-framework": agent_framework_demo, "nooa": nooa_demo,
}
