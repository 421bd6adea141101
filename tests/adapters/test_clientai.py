"""clientai: a persistent AgentContext behaves like clientai's own and survives the process."""

import dataclasses
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from clientai.agent import Agent, act, think
from clientai.agent.core.context import AgentContext

from contextstore.adapters.clientai import FIELDS, ContextStoreAgentContext, persist

ROOT = Path(__file__).resolve().parents[2]


class FrozenClock(datetime):
    """Both sides stamp history entries with now(); one fixed instant makes them comparable."""

    @classmethod
    def now(cls, tz=None):
        return cls(2026, 5, 4, 12, 30, 15, 123456)


@pytest.fixture
def frozen_clock(monkeypatch):
    monkeypatch.setattr("clientai.agent.core.context.datetime", FrozenClock)
    monkeypatch.setattr("contextstore.services.clientai.datetime", FrozenClock)


class FakeLLM:
    """clientai talks to its client through generate_text only; answer from the prompt."""

    def __init__(self) -> None:
        self.calls = 0

    def generate_text(self, prompt, model=None, **kwargs):
        self.calls += 1
        return f"reply {self.calls}: {str(prompt).splitlines()[0][:40]}"


class Helper(Agent):
    @think("analyze")
    def analyze(self, question: str) -> str:
        return f"Analyze: {question}\n{self.context.get_recent_history()}"

    @act("respond")
    def respond(self, analysis: str) -> str:
        return f"Answer using: {analysis}"


def fields_of(context: AgentContext) -> dict:
    return {name: getattr(context, name) for name in FIELDS}


def operations(context: AgentContext) -> list:
    """The same script for both contexts; returns what each read along the way."""
    seen = [context.get_recent_history()]
    context.set_input("What is Python?")
    context.set_step_result("analyze", "a language")
    seen.append(context.increment_iteration())
    context.state["topic"] = "python"  # clientai's workflow writes state directly too
    context.memory.append({"note": "likes examples"})
    context.set_input({"question": "And Rust?"})
    context.set_step_result("analyze", {"kind": "language", "safe": True})
    context.set_step_result("respond", "Rust is a systems language.")
    context.set_input("Third?")
    context.last_results["respond"] = "written directly"
    context.set_input("Fourth?")
    seen += [context.get_recent_history(), context.get_recent_history(1),
             context.get_recent_history(2, raw=True), context.get_step_result("analyze")]
    context.set_max_history_size(2)
    seen.append(context.get_recent_history())
    with pytest.raises(ValueError, match="non-negative"):
        context.set_max_history_size(-1)
    return seen


def test_the_same_operations_give_the_same_context_as_clientai(store, frozen_clock):
    plain = AgentContext()
    persistent = ContextStoreAgentContext.load(store.thread("clientai-1", user_id="ann"))

    assert operations(persistent) == operations(plain)
    persistent.save()
    assert fields_of(persistent) == fields_of(plain)

    plain.clear()
    persistent.clear()
    assert fields_of(persistent) == fields_of(plain)
    assert persistent.get_recent_history() == plain.get_recent_history()
    plain.clear_all()
    persistent.clear_all()
    assert fields_of(persistent) == fields_of(plain)


def test_another_process_loads_the_same_context(live_server, store, token, frozen_clock):
    thread = store.thread("clientai-2", user_id="ann")
    persistent = ContextStoreAgentContext.load(thread)
    operations(persistent)
    persistent.save()

    restored = json.loads(run_elsewhere(live_server.url, token[1], thread.id))

    assert restored == json.loads(json.dumps(fields_of(persistent)))


def test_an_agent_run_keeps_its_history_in_contextstore_like_clientai_does(store, frozen_clock):
    plain_agent = Helper(client=FakeLLM(), default_model="fake")
    agent = Helper(client=FakeLLM(), default_model="fake")
    thread = store.thread("clientai-3", user_id="ann", agent="helper")
    persist(agent, thread)

    answers = [agent.run(q) for q in ("What is Python?", "And Rust?", "Which is older?")]

    assert answers == [plain_agent.run(q) for q in ("What is Python?", "And Rust?", "Which is older?")]
    assert agent.context.get_recent_history() == plain_agent.context.get_recent_history()
    assert thread.get_recent_history() == plain_agent.context.get_recent_history()
    assert thread.get_step_result("respond") == plain_agent.context.get_step_result("respond")
    inputs = [e.content for e in thread.events(type="Input")]
    assert "Which is older?" in inputs
    assert len(thread.events(type="StepResult")) == 6


def run_elsewhere(url: str, token: str, thread_id: int) -> str:
    """Load the thread's context in a fresh interpreter and print its fields as JSON."""
    script = (
        "import json, sys\n"
        "from contextstore.client import ContextStore\n"
        "from contextstore.adapters.clientai import FIELDS, ContextStoreAgentContext\n"
        "with ContextStore(sys.argv[1], sys.argv[2]) as cs:\n"
        "    c = ContextStoreAgentContext.load(cs.get_thread(int(sys.argv[3])))\n"
        "    print(json.dumps({n: getattr(c, n) for n in FIELDS}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)  # the client must work without Django
    done = subprocess.run([sys.executable, "-c", script, url, token, str(thread_id)],
                          capture_output=True, text=True, env=env, timeout=60, check=True)
    return done.stdout


def test_the_adapter_context_is_still_a_clientai_agent_context():
    assert issubclass(ContextStoreAgentContext, AgentContext)
    assert {f.name for f in dataclasses.fields(ContextStoreAgentContext)} >= set(FIELDS)
