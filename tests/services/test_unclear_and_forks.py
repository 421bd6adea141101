"""clear-context ↔ un-clear, fork ↔ delete fork, and forks that copy a range's working context
exactly (summaries with their collapses, still undoable in the child)."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextstore.errors import Conflict
from contextstore.models import AuditLog, Clear, Collapse, Event, Thread
from contextstore.selectors import rendering
from contextstore.services.collapses import collapse_create, collapse_undo
from contextstore.services.events import event_append
from contextstore.services.sessions import thread_ensure
from contextstore.services.state import state_write
from contextstore.services.threads import (
    thread_clear_context,
    thread_delete_fork,
    thread_fork,
    thread_unclear,
)
from tests.conftest import messages


def working(thread: Thread) -> list[tuple[str, str]]:
    return list(Event.objects.filter(thread=thread, status="active", visible=True)
                .order_by("position").values_list("type", "content"))


def test_unclear_brings_back_the_events_at_their_places_and_the_summary(thread, actor):
    event_append(thread=thread, events=messages(4, words=5), actor=actor)
    collapse_create(thread=thread, start_position=2, end_position=3, summary_text="middle", actor=actor)
    state_write(thread=thread, summary="compacted so far", actor=actor)
    before = working(thread)

    clear = thread_clear_context(thread=thread, actor=actor)
    event_append(thread=thread, events=messages(1, start=9, words=5), actor=actor)  # after the clear
    result = thread_unclear(clear=clear, actor=actor)

    thread.refresh_from_db()
    # The returning events are older, so they stand before the one appended since.
    assert working(thread) == before + [("Message", "turn 9: context")]
    assert thread.summary == "compacted so far"
    assert (thread.active_event_count, result.restored, result.summary_restored) == (4, 3, True)
    # The summary of the collapse came back active: its collapse can be undone again.
    collapse_undo(collapse=Collapse.objects.get(thread=thread), actor=actor)
    assert len(working(thread)) == 5
    audit = AuditLog.objects.get(action="thread.unclear")
    assert audit.details == {"clear": clear.pk, "restored": 3, "summary_restored": True}


def test_unclear_keeps_a_summary_written_since_the_clear_and_cannot_run_twice(thread, actor):
    event_append(thread=thread, events=messages(2, words=5), actor=actor)
    state_write(thread=thread, summary="old", actor=actor)
    clear = thread_clear_context(thread=thread, actor=actor)
    state_write(thread=thread, summary="newer", actor=actor)
    result = thread_unclear(clear=clear, actor=actor)
    thread.refresh_from_db()
    assert (thread.summary, result.summary_restored, result.restored) == ("newer", False, 2)
    with pytest.raises(Conflict):
        thread_unclear(clear=clear, actor=actor)


def test_clears_are_independent_and_each_brings_back_only_its_own_events(thread, actor):
    event_append(thread=thread, events=messages(2, words=5), actor=actor)
    first = thread_clear_context(thread=thread, actor=actor)
    event_append(thread=thread, events=messages(2, start=5, words=5), actor=actor)
    second = thread_clear_context(thread=thread, actor=actor)
    thread_unclear(clear=first, actor=actor)
    assert [c for _, c in working(thread)] == ["turn 0: context", "turn 1: context"]
    thread_unclear(clear=second, actor=actor)
    assert len(working(thread)) == 4
    assert Clear.objects.filter(thread=thread, undone_at__isnull=True).count() == 0


def test_a_fork_over_a_collapse_copies_the_summary_and_its_originals(thread, actor):
    """The issue's case: events 1–10, 3–5 collapsed into S; fork 1–8 has 1, 2, S, 6, 7, 8."""
    event_append(thread=thread, events=messages(10, words=5), actor=actor)
    collapse_create(thread=thread, start_position=3, end_position=5, summary_text="S", actor=actor)
    child = thread_fork(thread=thread, name="branch", start_position=1, end_position=8, actor=actor)
    assert [c.split(":")[0] for _, c in working(child)] == [
        "turn 0", "turn 1", "S", "turn 5", "turn 6", "turn 7"]
    assert (child.fork_start_position, child.fork_end_position) == (1, 8)
    copy = child.collapses.get()
    assert (copy.start_position, copy.end_position, copy.members.count()) == (3, 5, 3)
    collapse_undo(collapse=copy, actor=actor)
    assert len(working(child)) == 8
    assert len(working(thread)) == 8  # the parent is untouched


def test_delete_fork_removes_the_fork_and_leaves_the_parent_alone(thread, actor):
    event_append(thread=thread, events=messages(3, words=5), actor=actor)
    child = thread_fork(thread=thread, name="branch", actor=actor)
    event_append(thread=child, events=messages(1, start=7, words=5), actor=actor)
    with pytest.raises(Conflict) as refused:
        thread_delete_fork(thread=thread, actor=actor)
    assert refused.value.code == "not_a_fork"

    parent = thread_delete_fork(thread=child, actor=actor)

    assert parent.pk == thread.pk and not Thread.objects.filter(pk=child.pk).exists()
    assert len(working(thread)) == 3
    thread.session.refresh_from_db()
    assert (thread.session.thread_count, thread.session.event_count) == (1, 3)
    audit = AuditLog.objects.get(action="thread.delete_fork")
    assert audit.details["name"] == "branch" and audit.details["events"] == 4


names = itertools.count()
STEPS = st.lists(st.tuples(st.sampled_from(["append", "collapse", "undo", "clear", "unclear"]),
                           st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=12)


@given(steps=STEPS, a=st.integers(0, 1000), b=st.integers(0, 1000))
def test_a_fork_renders_exactly_the_parents_render_restricted_to_its_range(session, actor, steps, a, b):
    thread = thread_ensure(session=session, name=f"p-{next(names)}", actor=actor)[0]
    event_append(thread=thread, events=messages(6, words=3), actor=actor)
    for kind, x, y in steps:
        active = list(Event.objects.filter(thread=thread, status="active")
                      .order_by("position").values_list("position", flat=True))
        if kind == "append":
            event_append(thread=thread, events=messages(1 + x % 3, start=x, words=3), actor=actor)
        elif kind == "collapse" and active:
            i, j = sorted((x % len(active), y % len(active)))
            collapse_create(thread=thread, start_position=active[i], end_position=active[j],
                            summary_text=f"summary {x}", actor=actor)
        elif kind == "undo":
            undoable = list(Collapse.objects.filter(thread=thread, undone_at__isnull=True,
                                                    summary_event__status="active"))
            if undoable:
                collapse_undo(collapse=undoable[x % len(undoable)], actor=actor)
        elif kind == "clear":
            thread_clear_context(thread=thread, actor=actor)
        elif kind == "unclear":
            pending = list(Clear.objects.filter(thread=thread, undone_at__isnull=True))
            if pending:
                thread_unclear(clear=pending[x % len(pending)], actor=actor)
    thread.refresh_from_db()
    last = max(thread.last_seq, 1)
    start, end = sorted((1 + a % last, 1 + b % last))

    child = thread_fork(thread=thread, name=f"c-{next(names)}", start_position=start,
                        end_position=end, actor=actor)

    def history(t: Thread, keep=lambda m: True) -> list[tuple[str, str, str]]:
        render = rendering.context_render(thread=t, max_tokens=10**7)
        return [(m["type"], m["role"], m["content"]) for m in render["messages"]
                if m["section"] == "history" and keep(m)]

    # A render starts at a turn's start (a user message or a collapse's summary): the range may
    # begin inside a turn, whose head the fork's render leaves out.
    within = history(thread, lambda m: start <= m["position"] <= end)
    while within and within[0][0] != "Summary" and within[0][1] != "user":
        within.pop(0)
    assert history(child) == within
    # Every collapse came along undoable: undo them all, outermost first, in the child.
    while True:
        undoable = Collapse.objects.filter(thread=child, undone_at__isnull=True,
                                           summary_event__status="active").first()
        if undoable is None:
            break
        collapse_undo(collapse=undoable, actor=actor)
    assert not Event.objects.filter(thread=child, status="collapsed").exists()


@pytest.mark.django_db(transaction=True)
def test_an_agent_appending_while_a_person_clears_unclears_and_forks_loses_nothing(thread, actor):
    """An agent appends while a person clears, un-clears, forks and deletes the fork: every
    event is kept once, the returning events stand before the newer ones, counters stay exact."""
    import threading

    from django.db import connections

    from contextstore.services import history

    errors: list[BaseException] = []

    def agent() -> None:
        try:
            for b in range(12):
                event_append(thread=thread, actor=actor, events=[
                    {"type": "Message", "content": f"a{b}-{i}"} for i in range(3)])
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    def person() -> None:
        try:
            for round_ in range(4):
                clear = thread_clear_context(thread=thread, actor=actor)
                child = thread_fork(thread=thread, name=f"f{round_}", actor=actor)
                thread_unclear(clear=clear, actor=actor)
                thread_delete_fork(thread=child, actor=actor)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=agent), threading.Thread(target=person)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert not errors
    assert Event.objects.filter(thread=thread).count() == 36
    assert Event.objects.filter(thread=thread, status="active").count() == 36  # every clear undone
    assert list(Event.objects.filter(thread=thread).order_by("position")
                .values_list("seq", flat=True)) == list(range(1, 37))
    assert Thread.objects.filter(session=thread.session).count() == 1
    stored, recounted = (history.counters_stored(session=thread.session),
                         history.counters_recount(session=thread.session))
    assert stored == recounted
