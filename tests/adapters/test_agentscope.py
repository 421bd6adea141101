"""AgentScope: AgentState kept per (user, session, thread), compare-and-swap, clearContext."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agentscope.agent import Agent
from agentscope.message import TextBlock, UserMsg
from agentscope.permission import PermissionContext
from agentscope.state import AgentState, Task
from contextstore_client import ContextStore, PayloadTooLarge
from contextstore_client.adapters.agentscope import ContextStoreStateStore, StaleRevision

from tests.adapters.agentscope_fakes import EchoModel, turn

ROOT = Path(__file__).resolve().parents[2]


def texts(state: AgentState) -> list[str]:
    return [m.get_text_content() for m in state.context]


def turn_elsewhere(url: str, token: str, text: str) -> str:
    """The same call made by another process."""
    script = (
        "import sys\n"
        "from contextstore_client import ContextStore\n"
        "from contextstore_client.adapters.agentscope import ContextStoreStateStore\n"
        "from tests.adapters.agentscope_fakes import turn\n"
        "with ContextStore(sys.argv[1], sys.argv[2]) as cs:\n"
        "    print(turn(ContextStoreStateStore(cs), 'alice', 'session-001', sys.argv[3]))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run([sys.executable, "-c", script, url, token, text], capture_output=True,
                          text=True, env=env, timeout=120, check=True)
    return done.stdout.strip()


def in_memory(*inputs: str) -> tuple[list[str], AgentState]:
    """AgentScope on its own: the same turns on one in-memory state."""
    state, answers = AgentState(), []
    for text in inputs:
        agent = Agent(name="helper", system_prompt="Be brief.", model=EchoModel(), state=state)
        answers.append(asyncio.run(agent.reply(UserMsg("alice", text))).get_text_content())
    return answers, state


def test_two_processes_alternate_on_one_session(live_server, store, token):
    states = ContextStoreStateStore(store)

    first = turn(states, "alice", "session-001", "hello")
    second = turn_elsewhere(live_server.url, token[1], "what did I say?")
    third = turn(states, "alice", "session-001", "and now?")

    # Each reply saw the whole conversation so far, whoever ran the turn before.
    answers, alone = in_memory("hello", "what did I say?", "and now?")
    assert [first, second, third] == answers
    assert third.startswith("seen 6")
    loaded = states.load("alice", "session-001")
    assert texts(loaded) == texts(alone)
    # the agent's system prompt, put by the first process and unchanged by the others
    blocks = states.thread("alice", "session-001").blocks()
    assert [(b.name, b.value, b.version) for b in blocks] == [("system_prompt", "Be brief.", 1)]
    events = states.thread("alice", "session-001").events()
    # the reply opens with AgentScope's time reminder (a hint block): a user message, as sent
    assert [(e.type, e.role) for e in events[:3]] == [("Message", "user")] * 2 + [("LLMOutput", "assistant")]
    assert events[0].content == "hello" and "<current-time>" in events[1].content
    assert events[2].content == first
    assert events[1].run_id == events[2].run_id == loaded.context[1].id  # the reply id is the run


def test_a_concurrent_stale_save_is_refused_and_writes_nothing(live_server, store, token):
    mine = ContextStoreStateStore(store)
    with ContextStore(live_server.url, token[1]) as other_client:
        theirs = ContextStoreStateStore(other_client)
        mine_state = mine.load("bob", "s-2")
        their_state = theirs.load("bob", "s-2")
        their_state.middle_context["writer"] = "theirs"
        theirs.save(their_state, "bob", "s-2")

        mine_state.middle_context["writer"] = "mine"
        mine_state.context.append(UserMsg("bob", "lost words"))
        with pytest.raises(StaleRevision):
            mine.save(mine_state, "bob", "s-2")

    reloaded = ContextStoreStateStore(store).load("bob", "s-2")
    assert reloaded.middle_context == {"writer": "theirs"}
    assert reloaded.context == []
    assert mine.thread("bob", "s-2").events(status="all") == []


def test_clear_context_keeps_tasks_permissions_and_tools(store):
    states = ContextStoreStateStore(store)
    state = states.load("carol", "s-3")
    state.tasks_context.tasks.append(Task(subject="ship", description="ship v1", metadata={}))
    state.permission_context = PermissionContext.model_validate({
        "mode": "accept_edits",
        "allow_rules": {"Bash": [{"tool_name": "Bash", "rule_content": "ls", "behavior": "allow",
                           "source": "userSettings"}]},
    })
    state.tool_context.activated_groups = ["files"]
    agent = Agent(name="helper", system_prompt="Be brief.", model=EchoModel(), state=state)
    asyncio.run(agent.reply(UserMsg("carol", "remember the plan")))
    agent.state.summary = "Carol has a plan."
    states.save(agent.state, "carol", "s-3")

    cleared = states.clear_context("carol", "s-3")
    reloaded = states.load("carol", "s-3")

    for result in (cleared, reloaded):
        assert result.context == [] and result.summary == ""
        assert [t.subject for t in result.tasks_context.tasks] == ["ship"]
        assert result.permission_context == agent.state.permission_context
        assert result.tool_context.activated_groups == ["files"]
        assert result.session_id == agent.state.session_id
    history = states.thread("carol", "s-3").events(status="all")
    # kept, not deleted: the message, the reply's time reminder, its text and the summary
    assert {e.status for e in history} == {"cleared"} and len(history) == 4
    # The next call starts the conversation afresh, as a new AgentScope conversation would.
    assert turn(states, "carol", "s-3", "fresh topic") == in_memory("fresh topic")[0][0]


def test_messages_agentscope_compressed_away_are_retired_and_the_summary_kept(store):
    states = ContextStoreStateStore(store)
    for text in ("one", "two", "three"):
        turn(states, "dan", "s-4", text)
    state = states.load("dan", "s-4")
    state.summary = "Dan counted to two."
    state.context = state.context[-2:]  # what AgentScope's compression keeps
    states.save(state, "dan", "s-4")

    reloaded = states.load("dan", "s-4")
    assert texts(reloaded) == texts(state) and reloaded.summary == "Dan counted to two."
    thread = states.thread("dan", "s-4")
    history = thread.events(status="all")
    # None deleted (the first reply's time reminder is an event too); the summary is a user
    # message in place of the last message dropped (that one kept as history, replaced), so
    # it stands where AgentScope sends it: before the kept messages.
    assert sorted(e.status for e in history) == ["active"] * 3 + ["removed"] * 4 + ["replaced"]
    active = sorted((e for e in history if e.status == "active"), key=lambda e: e.position)
    assert [(e.role, e.content) for e in active][0] == ("user", "Dan counted to two.")


def test_a_message_rewritten_in_place_stays_in_place(store):
    states = ContextStoreStateStore(store)
    for text in ("one", "two"):
        turn(states, "erin", "s-5", text)
    state = states.load("erin", "s-5")
    state.context[0].metadata["edited"] = True  # e.g. AgentScope's image limit on an old message
    state.context[1].content = [TextBlock(type="text", text="rewritten")]
    states.save(state, "erin", "s-5")
    reloaded = states.load("erin", "s-5")
    assert [m.id for m in reloaded.context] == [m.id for m in state.context]
    assert texts(reloaded) == texts(state) and reloaded.context[0].metadata == {"edited": True}
    old = [e for e in states.thread("erin", "s-5").events(status="replaced")]
    assert len(old) == 2  # the earlier versions are history


def test_a_refused_save_writes_neither_state_nor_messages(live_server, store, token):
    states = ContextStoreStateStore(store)
    turn(states, "fay", "s-6", "hello")
    state = states.load("fay", "s-6")
    state.middle_context["x"] = 1
    state.context.append(UserMsg("fay", "ok"))
    state.context.append(UserMsg("fay", "x" * 300_000))  # over the server's content limit
    thread = states.thread("fay", "s-6")
    before = (thread.events(status="all"), thread.state())
    with pytest.raises(PayloadTooLarge):
        states.save(state, "fay", "s-6")
    assert (thread.events(status="all"), thread.state()) == before


def test_5000_messages_in_one_save(store):
    states = ContextStoreStateStore(store)
    state = states.load("gus", "s-7")
    state.context = [UserMsg("gus", f"message {i}") for i in range(5000)]
    states.save(state, "gus", "s-7")
    reloaded = states.load("gus", "s-7")
    assert texts(reloaded) == [f"message {i}" for i in range(5000)]


def scripted(run_turn, person) -> list:
    """The script: six turns by two alternating processes, a person acting between some."""
    seen: list = []
    for number, text in enumerate(["hi", "my name is Ann", "what is 2+2?", "thanks",
                                   "summarise us", "bye"]):
        run_turn(number % 2, text, seen)
        person(number)
    return seen


def test_the_model_sees_the_same_transcript_as_on_agentscopes_own_state(live_server, store, token):
    from agentscope.message import UserMsg as U

    # AgentScope alone: one in-memory state; the person's actions applied as documented
    # (docs/frameworks/agentscope.md): a note is a message of its role at the end, a collapse
    # is a user message with the summary in place of the range, a clear empties context+summary.
    alone = AgentState()

    def alone_turn(process: int, text: str, seen: list) -> None:
        agent = Agent(name="helper", system_prompt="Be brief.", model=EchoModel(seen), state=alone)
        asyncio.run(agent.reply(U("alice", text)))

    def alone_person(after: int) -> None:
        if after == 1:
            alone.context.append(U("user", "NOTE: the user prefers metric units"))
        if after == 2:
            alone.context[0:2] = [U("user", "The user greeted and gave a name.")]
        if after == 3:
            alone.context, alone.summary = [], ""

    expected = scripted(alone_turn, alone_person)

    with ContextStore(live_server.url, token[1]) as second:
        stores = [ContextStoreStateStore(store), ContextStoreStateStore(second)]

        def cs_turn(process: int, text: str, seen: list) -> None:
            states = stores[process]
            state = states.load("alice", "scripted")
            agent = Agent(name="helper", system_prompt="Be brief.", model=EchoModel(seen), state=state)
            asyncio.run(agent.reply(U("alice", text)))
            states.save(agent.state, "alice", "scripted")

        person = stores[0].thread("alice", "scripted")

        def cs_person(after: int) -> None:
            if after == 1:
                person.append_one("Message", "NOTE: the user prefers metric units", role="user")
            if after == 2:
                first = person.events()[:2]
                person.collapse(first[0].seq, first[1].seq, "The user greeted and gave a name.")
            if after == 3:
                person.clear_context()

        actual = scripted(cs_turn, cs_person)
    assert actual == expected
    assert len(actual) == 6
    # Nothing duplicated: every active event is one of the last context's messages.
    final = ContextStoreStateStore(store).load("alice", "scripted")
    assert len(final.context) == len({m.id for m in final.context}) == 4


class WireModel(EchoModel):
    """Formats what it is given as a real OpenAI chat model does, and keeps what it would send."""

    def __init__(self, wire: list) -> None:
        super().__init__()
        self.wire = wire

    async def _call_api(self, model_name, messages, tools=None, tool_choice=None, **kwargs):
        self.wire.append(await self.formatter.format(messages))
        return await super()._call_api(model_name, messages, tools=tools, tool_choice=tool_choice, **kwargs)


def test_every_model_call_is_logged_with_the_messages_put_on_the_wire(store):
    slots = ContextStoreStateStore(store)
    wire: list = []
    for text in ("hi ünïcode", "and again"):
        state = slots.load("ann", "as-calls")
        model = slots.log_llm_calls(WireModel(wire), "ann", "as-calls")
        agent = Agent(name="helper", system_prompt="Be brief.", model=model, state=state)
        asyncio.run(agent.reply(UserMsg("ann", text)))
        slots.save(agent.state, "ann", "as-calls")

    thread = slots.thread("ann", "as-calls")
    starts = thread.events(type="LLMCallStart")
    assert len(starts) == len(wire) == 2
    for event, sent in zip(starts, wire, strict=True):
        call = thread.llm_call(event.seq)
        assert call["messages"] == sent and call["render_id"] is None
    assert [m["role"] for m in wire[1]][-3:] == ["user", "assistant", "user"]
    # the logged calls are runtime events: the slot's conversation is unchanged
    assert len(slots.load("ann", "as-calls").context) == 4


LOAD_ELSEWHERE = (
    "import json, sys\n"
    "from contextstore_client import ContextStore\n"
    "from contextstore_client.adapters.agentscope import ContextStoreStateStore\n"
    "with ContextStore(sys.argv[1], sys.argv[2]) as cs:\n"
    "    state = ContextStoreStateStore(cs).load(sys.argv[3], sys.argv[4])\n"
    "    sys.stdout.write(json.dumps(state.model_dump(mode='json')))\n"
)


def adversarial_state() -> AgentState:
    """What an agent may hold: huge, empty, JSON-looking and every kind of Unicode text, NUL
    included, and the fields AgentScope leaves None."""
    from agentscope.message import AssistantMsg, Msg, ThinkingBlock

    huge = ("ünï 😀 " * 20_000)[:100_000]
    odd = "\x00 NUL, \u200b zero width, \u202e RTL, e\u0301, 𝔘, \ufeff, \\u0000, \r\n\t"
    state = AgentState()
    state.context += [
        UserMsg("alice", huge),
        UserMsg("alice", ""),
        UserMsg("alice", '{"type": "text", "text": "not a block", "id": "cs:1"}'),
        UserMsg("alice", [TextBlock(type="text", text=""), TextBlock(type="text", text=odd)]),
        AssistantMsg("helper", [ThinkingBlock(type="thinking", thinking=odd),
                                TextBlock(type="text", text="null")]),
        Msg(name="", role="system", content=[], metadata={"": None, "k": [None, odd, {}]}),
    ]
    state.summary = odd
    state.middle_context.update({"huge": huge, "none": None, "json": "[1, 2]", "": odd})
    return state


def test_adversarial_content_saves_and_loads_equal_in_another_process(live_server, store, token):
    state = adversarial_state()
    ContextStoreStateStore(store).save(state, "alice", "adversarial")

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run([sys.executable, "-c", LOAD_ELSEWHERE, live_server.url, token[1], "alice",
                           "adversarial"], capture_output=True, env=env, timeout=120, check=True)
    loaded = AgentState.model_validate_json(done.stdout)

    assert loaded.model_dump(mode="json") == state.model_dump(mode="json")
    assert loaded.context[0].get_text_content() == state.context[0].get_text_content()
