"""An offline AgentScope chat model and a one-call helper, shared with child processes."""

import asyncio

from agentscope.agent import Agent
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import TextBlock, UserMsg
from agentscope.model import ChatModelBase
from agentscope.model._model_response import ChatResponse
from contextstore_client.adapters.agentscope import ContextStoreStateStore
from pydantic import BaseModel


class EchoModel(ChatModelBase):
    """Answers with how many messages it was shown and the last user text: deterministic."""

    class Parameters(BaseModel):
        pass

    def __init__(self, seen: list | None = None) -> None:
        super().__init__(credential=None, model="echo", parameters=self.Parameters(), stream=False)
        self.formatter = OpenAIChatFormatter()
        self.seen = seen  # when given, every call's transcript is recorded here

    async def _call_api(self, model_name, messages, tools=None, tool_choice=None, **kwargs):
        if self.seen is not None:
            self.seen.append([(m.role, m.get_text_content()) for m in messages])
        texts = [m.get_text_content() for m in messages if m.role == "user"]
        reply = f"seen {len(messages)}; last: {texts[-1] if texts else ''}"
        return ChatResponse(content=[TextBlock(type="text", text=reply)], is_last=True)


def turn(store: ContextStoreStateStore, user: str, session: str, text: str) -> str:
    """One call the stateless way: load the slot, build an agent on it, reply, save."""
    state = store.load(user, session)
    agent = Agent(name="helper", system_prompt="Be brief.", model=EchoModel(), state=state)
    answer = asyncio.run(agent.reply(UserMsg(user, text)))
    store.save(agent.state, user, session, system_prompt="Be brief.")
    return answer.get_text_content()
