"""AgentScope: AgentState kept per (user, session, thread), compare-and-swap, clearContext."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agentscope.agent import Agent
from agentscope.message import UserMsg
from agentscope.permission import PermissionContext
from agentscope.state import AgentState, Task

from contextstore.adapters.agentscope import ContextStoreStateStore, StaleRevision
from contextstore.client import ContextStore
from tests.adapters.agentscope_fakes import EchoModel, turn

ROOT = Path(__file__).resolve().parents[2]


def texts(state: AgentState) -> list[str]:
    return [m.get_text_content() for m in state.context]


def turn_elsewhere(url: str, token: str, text: str) -> str:
    """The same call made by another process."""
    script = (
        "import sys\n"
        "from contextstore.client import ContextStore\n"
        "from contextstore.adapters.agentscope import ContextStoreStateStore\n"
        "from tests.adapters.agentscope_fakes import turn\n"
        "with ContextStore(sys.argv[1], sys.argv[2]) as cs:\n"
        "    print(turn(ContextStoreStateStore(cs), 'alice', 'session-001', sys.argv[3]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
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
    events = states.thread("alice", "session-001").events()
    assert [(e.type, e.content) for e in events[:2]] == [("Message", "hello"), ("LLMOutput", first)]
    assert events[1].run_id == loaded.context[1].id  # the reply id is the run


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
    assert {e.status for e in history} == {"cleared"} and len(history) == 2  # kept, not deleted
    # The next call starts the conversation afresh, as a new AgentScope conversation would.
    assert turn(states, "carol", "s-3", "fresh topic") == in_memory("fresh topic")[0][0]


def test_messages_agentscope_compressed_away_are_collapsed_under_the_summary(store):
    states = ContextStoreStateStore(store)
    for text in ("one", "two", "three"):
        turn(states, "dan", "s-4", text)
    state = states.load("dan", "s-4")
    state.summary = "Dan counted to two."
    state.context = state.context[-2:]  # what AgentScope's compression keeps
    states.save(state, "dan", "s-4")

    assert texts(states.load("dan", "s-4")) == texts(state)
    thread = states.thread("dan", "s-4")
    assert [e.content for e in thread.events(type="Summary")] == ["Dan counted to two."]
    assert len(thread.events(status="all")) == 7  # six messages and the summary, none deleted
