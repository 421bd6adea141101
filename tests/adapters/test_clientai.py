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
from contextstore_client.adapters.clientai import FIELDS, ContextStoreAgentContext, log_llm_calls, persist

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
    monkeypatch.setattr("contextstore_client.adapters.clientai.datetime", FrozenClock)


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


class RecordingLLM(FakeLLM):
    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[str] = []

    def generate_text(self, prompt, model=None, **kwargs):
        self.prompts.append(prompt)
        return super().generate_text(prompt, model=model, **kwargs)


def test_every_model_call_is_logged_with_the_exact_prompt_sent(store, frozen_clock):
    llm = RecordingLLM()
    agent = Helper(client=llm, default_model="fake")
    thread = store.thread("clientai-calls", user_id="ann", agent="helper")
    persist(agent, thread)
    log_llm_calls(agent, thread)
    log_llm_calls(agent, thread)  # once is enough: calls are not logged twice

    answer = agent.run("What is Python? ünïcode")

    assert answer.startswith("reply 2: ")
    starts = thread.events(type="LLMCallStart")
    assert len(starts) == len(llm.prompts) == 2
    for event, prompt in zip(starts, llm.prompts, strict=True):
        call = thread.llm_call(event.seq)
        # clientai's providers send a prompt as one user message; the call names no render
        assert call["messages"] == [{"role": "user", "content": prompt}]
        assert call["render_id"] is None and event.data["model"] == "fake"
    assert len(thread.events(type="LLMComplete")) == 2


def run_elsewhere(url: str, token: str, thread_id: int) -> str:
    """Load the thread's context in a fresh interpreter and print its fields as JSON."""
    script = (
        "import json, sys\n"
        "from contextstore_client import ContextStore\n"
        "from contextstore_client.adapters.clientai import FIELDS, ContextStoreAgentContext\n"
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


# ---------------------------------------------------------------- agent time, removals, names, people

class ServerClock(datetime):
    """A server whose clock is elsewhere (UTC, hours away from the agent)."""

    @classmethod
    def now(cls, tz=None):
        return cls(2026, 5, 4, 1, 0, 0)


class AgentClock(datetime):
    """The agent's local time, five and a half hours ahead of UTC."""

    @classmethod
    def now(cls, tz=None):
        from datetime import timedelta, timezone

        return cls(2026, 5, 4, 12, 30, 15, tzinfo=timezone(timedelta(hours=5, minutes=30)))


def test_history_shows_the_agents_time_not_the_servers(store, monkeypatch):
    monkeypatch.setattr("clientai.agent.core.context.datetime", FrozenClock)
    monkeypatch.setattr("contextstore.services.clientai.datetime", ServerClock)
    monkeypatch.setattr("contextstore_client.adapters.clientai.datetime", AgentClock)
    thread = store.thread("clientai-time", user_id="ann")
    persistent = ContextStoreAgentContext.load(thread)
    plain = AgentContext()
    for context in (plain, persistent):
        context.set_input("q1")
        context.set_step_result("analyze", "a")
        context.set_input("q2")
    assert "Time: 2026-05-04 12:30:15" in thread.get_recent_history()
    assert thread.get_recent_history(raw=True)[0]["timestamp"].endswith("+05:30")


def test_the_client_sends_its_local_time_by_default(store):
    thread = store.thread("clientai-time-2", user_id="ann")
    thread.set_input("q1")
    thread.set_step_result("s", "r")
    thread.set_input("q2")
    stamp = datetime.fromisoformat(thread.get_recent_history(raw=True)[0]["timestamp"])
    assert stamp.tzinfo is not None
    assert thread.set_input("q3", timestamp="2026-01-01T08:00:00-07:00") is not None
    assert "Time: 2026-05-04" not in thread.get_recent_history()
    with pytest.raises(Exception, match="ISO 8601"):
        thread.set_input("q4", timestamp="yesterday")


def test_a_removed_step_result_does_not_come_back_in_history(store, frozen_clock):
    plain = AgentContext()
    persistent = ContextStoreAgentContext.load(store.thread("clientai-removed", user_id="ann"))
    for context in (plain, persistent):
        context.set_input("q1")
        context.set_step_result("draft", "scratch")
        context.set_step_result("answer", "42")
        del context.last_results["draft"]  # the workflow drops a result
        context.set_input("q2")
    assert persistent.get_recent_history(raw=True) == plain.get_recent_history(raw=True)
    assert persistent.thread.get_recent_history(raw=True)[0]["results"] == {"answer": "42"}


def test_any_step_name_is_taken_as_clientai_takes_it(store):
    persistent = ContextStoreAgentContext.load(store.thread("clientai-names", user_id="ann"))
    persistent.set_input("q")
    long_name = "step " * 60
    for name in ("", long_name, "a/b?c#d"):
        persistent.set_step_result(name, f"result of {name[:5]!r}")
    reloaded = ContextStoreAgentContext.load(persistent.thread)
    assert reloaded.last_results == persistent.last_results
    assert reloaded.thread.get_step_result("") == "result of ''"
    persistent.last_results[long_name + "!"] = "direct"
    persistent.save()
    assert ContextStoreAgentContext.load(persistent.thread).last_results[long_name + "!"] == "direct"


def test_5000_step_results_in_one_save(store):
    persistent = ContextStoreAgentContext.load(store.thread("clientai-big", user_id="ann"))
    persistent.set_input("q")
    for number in range(5000):
        persistent.last_results[f"s{number}"] = number
    persistent.save()
    assert len(ContextStoreAgentContext.load(persistent.thread).last_results) == 5000
    assert len(persistent.thread.events(type="StepResult")) == 5000


def test_the_prompts_equal_clientais_own_with_two_processes_and_a_person(live_server, store,
                                                                         token, frozen_clock):
    """clientai builds prompts from its history, never from the thread's events: a person's
    note, collapse and clear change nothing it sees (docs/frameworks/clientai.md)."""
    from contextstore_client import ContextStore

    questions = ["What is Python?", "And Rust?", "Which is older?", "Thanks", "Bye", "Again?"]
    plain_llm, plain_agent = FakeLLM(), None
    plain_agent = Helper(client=plain_llm, default_model="fake")
    expected = [plain_agent.run(q) for q in questions]

    answers = []
    with ContextStore(live_server.url, token[1]) as second:
        person = store.thread("clientai-scripted", user_id="ann", agent="helper")
        llm = FakeLLM()
        for number, question in enumerate(questions):
            client = (store, second)[number % 2]
            agent = Helper(client=llm, default_model="fake")
            persist(agent, client.thread("clientai-scripted", user_id="ann", agent="helper"))
            answers.append(agent.run(question))
            if number == 1:
                person.append_one("Message", "NOTE: be brief", role="user")
            if number == 2:
                first = person.events()[:2]
                person.collapse(first[0].seq, first[1].seq, "Asked about Python.")
            if number == 3:
                person.clear_context()
    assert answers == expected
    assert person.get_recent_history() == plain_agent.context.get_recent_history()
