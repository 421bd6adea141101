"""Agent Framework: the seed's UserInfoMemory example with contextstore as its storage."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from contextstore_client.adapters.agent_framework import ContextStoreSessionStore

from tests.adapters.agent_framework_fakes import turn

ROOT = Path(__file__).resolve().parents[2]
SEED_TURNS = ("Hello, what is the square root of 9?", "My name is Ruaidhri", "I am 20 years old")


def turn_elsewhere(url: str, token: str, text: str) -> str:
    script = (
        "import asyncio, sys\n"
        "from contextstore_client import ContextStore\n"
        "from tests.adapters.agent_framework_fakes import turn\n"
        "with ContextStore(sys.argv[1], sys.argv[2]) as cs:\n"
        "    print(asyncio.run(turn(cs, 'ruaidhri', 'chat-1', sys.argv[3])))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run([sys.executable, "-c", script, url, token, text], capture_output=True,
                          text=True, env=env, timeout=120, check=True)
    return done.stdout.strip()


def test_the_seed_user_info_memory_example_runs_on_contextstore(store):
    answers = [asyncio.run(turn(store, "ruaidhri", "chat-1", text)) for text in SEED_TURNS]

    # Before it knows the name it is told to ask; then the memory shows in its instructions.
    assert "Ask the user for their name" in answers[0]
    assert "The user's name is Ruaidhri." in answers[2]
    assert "Ask the user for their age" in answers[2]
    assert answers[0].startswith("1 messages") and answers[2].startswith("5 messages")
    memories = {m.key: m.data for m in store.recall(user_id="ruaidhri")}
    assert memories == {"name": {"name": "Ruaidhri"}, "age": {"age": 20}}
    thread = store.thread("chat-1", user_id="ruaidhri")
    assert thread.provider_state("user_info_memory").state == {
        "user_info": {"name": "Ruaidhri", "age": 20}}
    assert [(e.role, e.content) for e in thread.events()][:2] == [
        ("user", SEED_TURNS[0]), ("assistant", answers[0])]


def test_a_new_process_resumes_the_session(live_server, store, token):
    for text in SEED_TURNS:
        asyncio.run(turn(store, "ruaidhri", "chat-1", text))

    answer = turn_elsewhere(live_server.url, token[1], "What do you know about me?")

    # Six earlier messages plus the new one, and what it learned in the first process.
    assert answer.startswith("7 messages")
    assert "The user's name is Ruaidhri." in answer and "The user's age is 20." in answer
    session = asyncio.run(ContextStoreSessionStore(store, user_id="ruaidhri").get("chat-1"))
    assert session.state["user_info_memory"]["user_info"] == {"name": "Ruaidhri", "age": 20}


def test_blocks_summary_and_collapses_reach_the_agent(store):
    for text in SEED_TURNS[:2]:
        asyncio.run(turn(store, "ruaidhri", "chat-2", text))
    thread = store.thread("chat-2", user_id="ruaidhri")
    thread.put_block("policy", value="Answer in one sentence.", placement="prefix")
    thread.collapse(1, 2, "The user asked about a square root.")

    answer = asyncio.run(turn(store, "ruaidhri", "chat-2", "Thanks", blocks=True))

    assert "Answer in one sentence." in answer
    # The summary replaces two messages: summary, 2 messages of turn two, the new one.
    assert answer.startswith("4 messages")


def test_a_message_written_by_someone_else_joins_the_conversation(store):
    asyncio.run(turn(store, "ruaidhri", "chat-4", "hi"))
    thread = store.thread("chat-4", user_id="ruaidhri")
    thread.append_one("Message", "Note from the operator: be brief.", role="user")

    answer = asyncio.run(turn(store, "ruaidhri", "chat-4", "ok"))

    assert answer.startswith("4 messages")  # hi, its answer, the note, the new input


def test_a_deleted_session_snapshot_reads_as_absent(store):
    sessions = ContextStoreSessionStore(store, user_id="ruaidhri")
    asyncio.run(turn(store, "ruaidhri", "chat-3", "hi"))
    assert asyncio.run(sessions.get("chat-3")) is not None

    asyncio.run(sessions.delete("chat-3"))

    assert asyncio.run(sessions.get("chat-3")) is None


# ---------------------------------------------------------------- the seed, replays, size, people

from agent_framework import (  # noqa: E402
    Agent,
    ChatMiddlewareLayer,
    ContextProvider,
    InMemoryHistoryProvider,
    Message,
)
from contextstore_client import ContextStore  # noqa: E402
from contextstore_client.adapters.agent_framework import (  # noqa: E402
    ContextStoreHistoryProvider,
    UserInfo,
    UserInfoMemory,
)

from tests.adapters.agent_framework_fakes import ScriptedChatClient  # noqa: E402


class RecordingChatClient(ScriptedChatClient):
    """Records what each model call (not the extraction calls) receives."""

    def __init__(self, seen: list) -> None:
        super().__init__()
        self.seen = seen

    async def _inner_get_response(self, *, messages, stream, options, **kwargs):
        if options.get("response_format") is None:
            self.seen.append(([(str(m.role), m.text) for m in messages],
                              options.get("instructions", "")))
        return await super()._inner_get_response(messages=messages, stream=stream,
                                                 options=options, **kwargs)


class SeedUserInfoMemory(ContextProvider):
    """The seed document's UserInfoMemory, in memory, on today's ContextProvider hooks."""

    def __init__(self, chat_client) -> None:
        super().__init__("user_info_memory")
        self.chat_client, self.user_info = chat_client, UserInfo()

    async def after_run(self, *, agent, session, context, state) -> None:
        # The seed's Python invoked, line for line; its request_messages are today's
        # context.input_messages, its ChatOptions today's options.
        request_messages = context.input_messages
        user_messages = [msg for msg in request_messages if hasattr(msg, "role") and msg.role == "user"]
        if (self.user_info.name is None or self.user_info.age is None) and user_messages:
            try:
                result = await self.chat_client.get_response(request_messages, options={
                    "instructions": "Extract the user's name and age from the message if present. "
                                    "If not present return nulls.", "response_format": UserInfo})
                if result.value:
                    if self.user_info.name is None and result.value.name:
                        self.user_info.name = result.value.name
                    if self.user_info.age is None and result.value.age:
                        self.user_info.age = result.value.age
            except Exception:
                pass  # Failed to extract, continue without updating

    async def before_run(self, *, agent, session, context, state) -> None:
        # The seed's Python invoking, line for line; its Context(instructions=...) is today's
        # extend_instructions.
        instructions: list[str] = []
        if self.user_info.name is None:
            instructions.append(
                "Ask the user for their name and politely decline to answer any questions until "
                "they provide it."
            )
        else:
            instructions.append(f"The user's name is {self.user_info.name}.")
        if self.user_info.age is None:
            instructions.append(
                "Ask the user for their age and politely decline to answer any questions until "
                "they provide it."
            )
        else:
            instructions.append(f"The user's age is {self.user_info.age}.")
        context.extend_instructions(self.source_id, " ".join(instructions))


INSTRUCTIONS = "You are a friendly assistant. Always address the user by their name."
SCRIPT = ["Hello, what is the square root of 9?", "My name is Ruaidhri", "I am 20 years old",
          "thanks", "what do you know?", "bye"]
NOTE = "NOTE: the user prefers metric units"
SUMMARY = "The user asked about a square root."


def test_the_model_sees_what_the_seed_agent_on_its_own_history_sees(live_server, store, token):
    expected: list = []
    client = RecordingChatClient(expected)
    alone = Agent(client=client, instructions=INSTRUCTIONS,
                  context_providers=[InMemoryHistoryProvider(), SeedUserInfoMemory(client)])
    session = alone.create_session(session_id="scripted")
    for number, said in enumerate(SCRIPT):
        asyncio.run(alone.run(said, session=session))
        history = session.state[InMemoryHistoryProvider.DEFAULT_SOURCE_ID]["messages"]
        if number == 1:  # docs/frameworks/agent-framework.md: a note is a message of its role
            history.append(Message(role="user", contents=[NOTE]))
        if number == 2:  # a collapse: one system message with the summary in its place
            history[0:2] = [Message(role="system", contents=[SUMMARY])]
        if number == 3:  # a clear: the history is empty, provider state stays
            history.clear()

    actual: list = []
    with ContextStore(live_server.url, token[1]) as second:
        person = store.thread("scripted", user_id="ruaidhri")
        for number, said in enumerate(SCRIPT):
            cs = (store, second)[number % 2]  # two processes, each its own client, alternate
            recording = RecordingChatClient(actual)
            agent = Agent(client=recording, instructions=INSTRUCTIONS, context_providers=[
                ContextStoreHistoryProvider(cs, user_id="ruaidhri"),
                UserInfoMemory(cs, recording, user_id="ruaidhri")])
            session = agent.create_session(session_id="scripted")
            asyncio.run(agent.run(said, session=session))
            if number == 1:
                person.append_one("Message", NOTE, role="user")
            if number == 2:
                first = person.events()[:2]
                person.collapse(first[0].seq, first[1].seq, SUMMARY)
            if number == 3:
                person.clear_context()
    assert actual == expected
    # the seed's text, as the model gets it: the framework joins instructions with a newline,
    # the seed's provider its two sentences with a space
    assert expected[0][1] == (
        f"{INSTRUCTIONS}\nAsk the user for their name and politely decline to answer any questions "
        "until they provide it. Ask the user for their age and politely decline to answer any "
        "questions until they provide it.")
    assert len(actual[0][1]) == len(expected[0][1]) == 259
    assert expected[3][1] == f"{INSTRUCTIONS}\nThe user's name is Ruaidhri. The user's age is 20."
    assert len(expected) == 6 and expected[3][0][0] == ("system", SUMMARY)
    assert (("user", NOTE) in expected[2][0]) and len(expected[4][0]) == 1  # note; after the clear
    assert len(person.events()) == 4  # two turns since the clear, nothing twice


def test_a_replayed_transcript_is_stored_once(store):
    history = ContextStoreHistoryProvider(store, user_id="replay")
    first = [Message(role="user", contents=["hi"]), Message(role="assistant", contents=["hello"])]
    asyncio.run(history.save_messages("replay-1", first))
    again = [*first, Message(role="user", contents=["hi"]), Message(role="assistant", contents=["yo"])]
    asyncio.run(history.save_messages("replay-1", again))  # the whole transcript resent
    asyncio.run(history.save_messages("replay-1", again))
    loaded = asyncio.run(history.get_messages("replay-1"))
    assert [m.text for m in loaded] == ["hi", "hello", "hi", "yo"]  # a repeated turn is kept


def test_5000_messages_in_one_save_messages(store):
    history = ContextStoreHistoryProvider(store, user_id="big")
    batch = [Message(role="user", contents=[f"m{i}"]) for i in range(5000)]
    asyncio.run(history.save_messages("big-1", batch))
    assert [m.text for m in asyncio.run(history.get_messages("big-1"))] == [f"m{i}" for i in range(5000)]


def test_a_refused_save_messages_stores_none_of_them(store):
    from contextstore_client import PayloadTooLarge

    history = ContextStoreHistoryProvider(store, user_id="refused")
    batch = [Message(role="user", contents=[f"m{i}"]) for i in range(1500)]
    batch.append(Message(role="user", contents=["x" * 300_000]))
    try:
        asyncio.run(history.save_messages("refused-1", batch))
    except PayloadTooLarge:
        pass
    else:
        raise AssertionError("an oversized message must be refused")
    assert asyncio.run(history.get_messages("refused-1")) == []


class ExactChatClient(ChatMiddlewareLayer, ScriptedChatClient):
    """Keeps each model call's messages and instructions exactly as the client received them;
    with the middleware layer every real chat client has (OpenAI, Anthropic, Azure, ...)."""

    def __init__(self, sent: list) -> None:
        super().__init__()
        self.sent = sent

    async def _inner_get_response(self, *, messages, stream, options, **kwargs):
        self.sent.append(([m.to_dict() for m in messages], options.get("instructions")))
        return await super()._inner_get_response(messages=messages, stream=stream,
                                                 options=options, **kwargs)


def test_every_model_call_is_logged_with_the_exact_messages_sent(store):
    from contextstore_client.adapters.agent_framework import ContextStoreCallLog, ContextStoreContextProvider

    sent: list = []
    agent = Agent(client=ExactChatClient(sent), instructions=INSTRUCTIONS, context_providers=[
        ContextStoreHistoryProvider(store, user_id="cal"), ContextStoreContextProvider(store, user_id="cal")],
        middleware=[ContextStoreCallLog(store, user_id="cal")])
    thread = store.thread("af-calls", user_id="cal", agent="agent-framework")
    thread.put_block("persona", value="Speak plainly, ünïcode.", placement="prefix")
    session = agent.create_session(session_id="af-calls")
    for text in ("Hello", "What did I say?"):
        asyncio.run(agent.run(text, session=session))

    starts = thread.events(type="LLMCallStart")
    assert len(starts) == len(sent) == 2
    for event, (messages, instructions) in zip(starts, sent, strict=True):
        call = thread.llm_call(event.seq)
        assert call["messages"] == messages and call["render_id"] is None
        assert event.data["instructions"] == instructions and "Speak plainly" in instructions
    assert [m["role"] for m in thread.llm_call(starts[1].seq)["messages"]] == ["user", "assistant", "user"]
    # the blocks were read without a record: nothing names a render
    assert all(e.data.get("render_id") is None for e in thread.events(type="LLMComplete"))


SEED_SCRIPTS = {
    # the seed's own three turns, its accented name as the seed spells it
    "seed": ["Hello, what is the square root of 9?", "My name is Ruaidhrí", "I am 20 years old"],
    # the age before the name, a name outside Latin-1, an age of 0 (the seed keeps no falsy age)
    "age first": ["I am 0 years old", "I am 41 years old", "My name is Zoë李", "ok"],
    # nothing to extract: the instructions ask for both all along
    "nothing": ["hi", "what is 2+2?"],
}


@pytest.mark.parametrize("script", list(SEED_SCRIPTS))
def test_user_info_memory_gives_the_instructions_of_the_seed_in_memory(store, script):
    """Each model call of the seed's agent on contextstore gets the messages and instructions,
    character for character, that the seed's in-memory UserInfoMemory gives on the real Agent
    Framework, each turn a fresh agent and session as a new process has them."""
    said = SEED_SCRIPTS[script]
    expected: list = []
    client = RecordingChatClient(expected)
    alone = Agent(client=client, instructions=INSTRUCTIONS,
                  context_providers=[InMemoryHistoryProvider(), SeedUserInfoMemory(client)])
    session = alone.create_session(session_id=script)
    for text in said:
        asyncio.run(alone.run(text, session=session))

    actual: list = []
    for text in said:
        recording = RecordingChatClient(actual)
        agent = Agent(client=recording, instructions=INSTRUCTIONS, context_providers=[
            ContextStoreHistoryProvider(store, user_id="seed-" + script),
            UserInfoMemory(store, recording, user_id="seed-" + script)])
        asyncio.run(agent.run(text, session=agent.create_session(session_id=script)))

    assert [len(i) for _, i in actual] == [len(i) for _, i in expected]
    assert actual == expected
