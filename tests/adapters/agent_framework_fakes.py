"""An offline Agent Framework chat client and the seed's agent, shared with child processes."""

import json
import re

from agent_framework import Agent, BaseChatClient, ChatResponse, Message
from contextstore_client import ContextStore
from contextstore_client.adapters.agent_framework import (
    ContextStoreContextProvider,
    ContextStoreHistoryProvider,
    ContextStoreSessionStore,
    UserInfoMemory,
)


class ScriptedChatClient(BaseChatClient):
    """Answers with what it was given; extracts name and age like a model asked for JSON."""

    async def _inner_get_response(self, *, messages, stream, options, **kwargs):
        if options.get("response_format") is not None:
            said = " ".join(m.text for m in messages if str(m.role) == "user")
            name = re.search(r"[Mm]y name is (\w+)", said)
            age = re.search(r"(\d+) years old", said)
            text = json.dumps({"name": name and name.group(1), "age": age and int(age.group(1))})
        else:
            text = f"{len(messages)} messages | {options.get('instructions', '')}"
        # Real clients hand the requested format on, so that response.value parses it.
        return ChatResponse(messages=[Message(role="assistant", contents=[text])],
                            response_format=options.get("response_format"))


def seed_agent(cs: ContextStore, user_id: str, *, blocks: bool = False) -> Agent:
    """The seed document's agent: friendly instructions, UserInfoMemory, history in contextstore
    (with blocks=True also the thread's blocks, summary and memories)."""
    client = ScriptedChatClient()
    providers = [ContextStoreHistoryProvider(cs, user_id=user_id),
                 UserInfoMemory(cs, client, user_id=user_id)]
    if blocks:
        providers.append(ContextStoreContextProvider(cs, user_id=user_id))
    return Agent(
        client=client,
        instructions="You are a friendly assistant. Always address the user by their name.",
        context_providers=providers,
    )


async def turn(cs: ContextStore, user_id: str, session_id: str, text: str, *,
               blocks: bool = False) -> str:
    """One turn as a fresh process would take it: session from the store, run, store again."""
    sessions = ContextStoreSessionStore(cs, user_id=user_id)
    agent = seed_agent(cs, user_id, blocks=blocks)
    session = await sessions.get(session_id) or agent.create_session(session_id=session_id)
    response = await agent.run(text, session=session)
    await sessions.set(session_id, session)
    return response.text
