"""Our clientai services against clientai's own AgentContext, operation by operation."""

import itertools
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextstore.models import Event, StateRevision
from contextstore.services import clientai as svc
from contextstore.services.sessions import thread_ensure
from contextstore.services.state import state_write
from tests.services import reference_clientai
from tests.services.reference_clientai import AgentContext

FIXED = datetime(2026, 3, 14, 15, 9, 26, 535897)


class FrozenDatetime(datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED


@pytest.fixture(autouse=True)
def frozen_time(monkeypatch):
    monkeypatch.setattr(svc, "datetime", FrozenDatetime)
    monkeypatch.setattr(reference_clientai, "datetime", FrozenDatetime)


FIELDS = (
    "memory",
    "state",
    "last_results",
    "current_input",
    "original_input",
    "conversation_history",
    "max_history_size",
    "iteration",
)


def same(thread, ctx: AgentContext) -> None:
    thread.refresh_from_db()
    assert {f: getattr(thread, f) for f in FIELDS} == {f: getattr(ctx, f) for f in FIELDS}
    for n in (None, 0, 1, 2, 5):
        assert svc.recent_history(thread=thread, n=n) == ctx.get_recent_history(n=n)
        assert svc.recent_history(thread=thread, n=n, raw=True) == ctx.get_recent_history(n=n, raw=True)


def test_the_documented_example(thread, actor):
    ctx = AgentContext()
    for target in (ctx,):
        target.set_input("What is Python?")
        target.set_step_result("analyze", "Python is a programming language")
        target.set_input("How do I install Python?")
    svc.thread_set_input(thread=thread, input_data="What is Python?", actor=actor)
    svc.thread_set_step_result(
        thread=thread, step="analyze", result="Python is a programming language", actor=actor
    )
    svc.thread_set_input(thread=thread, input_data="How do I install Python?", actor=actor)
    same(thread, ctx)
    assert svc.recent_history(thread=thread) == (
        "Previous Interactions:\nInteraction 1:\nTime: 2026-03-14 15:09:26\n"
        "Input: What is Python?\nResults:\n- analyze: Python is a programming language"
        "\n\nNow handling the current query."
    )


def test_history_texts_when_there_is_none(thread, actor):
    assert svc.recent_history(thread=thread) == "No interactions available."
    svc.thread_set_input(thread=thread, input_data="hi", actor=actor)
    thread.refresh_from_db()
    assert svc.recent_history(thread=thread) == "No previous interactions. This is the first query."


def test_input_without_results_does_not_reach_history(thread, actor):
    svc.thread_set_input(thread=thread, input_data="a", actor=actor)
    svc.thread_set_input(thread=thread, input_data="b", actor=actor)
    thread.refresh_from_db()
    assert thread.conversation_history == [] and thread.current_input == "b"


def test_results_keep_their_insertion_order_in_the_text(thread, actor):
    svc.thread_set_input(thread=thread, input_data="q", actor=actor)
    for step in ("summarize", "analyze", "b"):
        svc.thread_set_step_result(thread=thread, step=step, result=step.upper(), actor=actor)
    svc.thread_set_input(thread=thread, input_data="next", actor=actor)
    thread.refresh_from_db()
    assert "- summarize: SUMMARIZE\n- analyze: ANALYZE\n- b: B" in svc.recent_history(thread=thread)


def test_clear_keeps_history_and_clear_all_does_not(thread, actor):
    svc.thread_set_input(thread=thread, input_data="q", actor=actor)
    svc.thread_set_step_result(thread=thread, step="s", result=1, actor=actor)
    svc.thread_set_input(thread=thread, input_data="q2", actor=actor)
    state_write(thread=thread, state={"k": "v"}, memory=[{"a": "b"}], actor=actor)
    svc.thread_increment_iteration(thread=thread, actor=actor)
    svc.thread_reset(thread=thread, actor=actor)
    thread.refresh_from_db()
    assert (thread.state, thread.memory, thread.iteration, thread.current_input) == ({}, [], 0, None)
    assert len(thread.conversation_history) == 1
    svc.thread_reset_all(thread=thread, actor=actor)
    thread.refresh_from_db()
    assert thread.conversation_history == []


def test_every_operation_is_a_recorded_revision_and_inputs_become_events(thread, actor):
    svc.thread_set_input(thread=thread, input_data="q", actor=actor)
    svc.thread_set_step_result(thread=thread, step="s", result={"x": 1}, actor=actor)
    assert svc.thread_increment_iteration(thread=thread, actor=actor) == 1
    assert list(StateRevision.objects.filter(thread=thread).values_list("reason", flat=True)) == [
        "initial document",
        "set_input",
        "set_step_result s",
        "increment_iteration",
    ]
    assert list(Event.objects.filter(thread=thread).values_list("type", "content")) == [
        ("Input", "q"),
        ("StepResult", "{'x': 1}"),
    ]


names = itertools.count()
# Any text the API lets through: every valid string, NUL and the storage escape's symbols
# included; it refuses lone surrogates (not text in UTF-8) and NaN or Infinity (not JSON) before a
# service runs.
stored_text = st.characters(codec="utf-8") | st.sampled_from("\x00\u2400\u241b")
operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("set_input"),
            st.one_of(
                st.text(stored_text, max_size=8),
                st.integers(),
                st.none(),
                st.dictionaries(st.text(stored_text, max_size=3), st.integers(), max_size=2),
            ),
        ),
        st.tuples(
            st.just("set_step_result"),
            st.sampled_from(["analyze", "draft", "b", "review"]),
            st.one_of(st.text(stored_text, max_size=8), st.integers(),
                      st.floats(allow_nan=False, allow_infinity=False), st.booleans()),
        ),
        st.tuples(st.just("increment_iteration")),
        st.tuples(st.just("set_max_history_size"), st.integers(0, 4)),
        st.tuples(st.just("clear")),
        st.tuples(st.just("clear_all")),
    ),
    max_size=25,
)


@given(ops=operations)
def test_any_sequence_of_operations_matches_clientai(session, actor, ops):
    thread, _ = thread_ensure(session=session, name=f"ops-{next(names)}", actor=actor)
    ctx = AgentContext()
    for op, *args in ops:
        if op == "set_input":
            ctx.set_input(args[0])
            svc.thread_set_input(thread=thread, input_data=args[0], actor=actor)
        elif op == "set_step_result":
            ctx.set_step_result(*args)
            svc.thread_set_step_result(thread=thread, step=args[0], result=args[1], actor=actor)
        elif op == "increment_iteration":
            assert svc.thread_increment_iteration(thread=thread, actor=actor) == ctx.increment_iteration()
        elif op == "set_max_history_size":
            ctx.set_max_history_size(args[0])
            svc.thread_set_max_history_size(thread=thread, size=args[0], actor=actor)
        elif op == "clear":
            ctx.clear()
            svc.thread_reset(thread=thread, actor=actor)
        else:
            ctx.clear_all()
            svc.thread_reset_all(thread=thread, actor=actor)
    same(thread, ctx)
