import itertools

import pytest
from django.db.models import Sum
from hypothesis import given
from hypothesis import strategies as st

from contextstore.errors import Conflict, InvalidInput
from contextstore.models import Collapse, Event
from contextstore.services.collapses import collapse_create, collapse_undo
from contextstore.services.events import event_append
from contextstore.services.sessions import thread_ensure
from contextstore.services.threads import thread_clear_context
from tests.conftest import messages


def working(thread) -> list[tuple[int, str]]:
    return list(Event.objects.filter(thread=thread, status="active")
                .order_by("position").values_list("position", "content"))


def assert_counters_match(thread) -> None:
    thread.refresh_from_db()
    visible = Event.objects.filter(thread=thread, status="active", visible=True)
    assert thread.active_event_count == visible.count()
    assert thread.active_tokens == (visible.aggregate(t=Sum("token_count"))["t"] or 0)
    assert thread.event_count == thread.last_seq == Event.objects.filter(thread=thread).count()


def test_a_collapse_replaces_its_range_with_a_summary_standing_where_the_range_stood(thread, actor):
    event_append(thread=thread, events=messages(6, words=20), actor=actor)
    collapse = collapse_create(thread=thread, start_position=2, end_position=4,
                               summary_text="middle", actor=actor)
    assert [p for p, _ in working(thread)] == [1, 2, 5, 6]
    assert working(thread)[1] == (2, "middle")
    assert collapse.summary_event.seq == 7 and collapse.event_count == 3
    assert collapse.tokens_after < collapse.tokens_before
    assert set(Event.objects.filter(collapse=collapse).values_list("seq", flat=True)) == {2, 3, 4}
    assert_counters_match(thread)


def test_undo_brings_the_originals_back(thread, actor):
    event_append(thread=thread, events=messages(6), actor=actor)
    before = working(thread)
    collapse = collapse_create(thread=thread, start_position=1, end_position=3, summary_text="s", actor=actor)
    collapse_undo(collapse=collapse, actor=actor)
    assert working(thread) == before
    assert Event.objects.get(pk=collapse.summary_event_id).status == "reverted"
    assert_counters_match(thread)
    with pytest.raises(Conflict):
        collapse_undo(collapse=collapse, actor=actor)


def test_collapses_nest_and_undo_one_level_at_a_time(thread, actor):
    event_append(thread=thread, events=messages(8), actor=actor)
    inner = collapse_create(thread=thread, start_position=3, end_position=5,
                            summary_text="inner", actor=actor)
    outer = collapse_create(thread=thread, start_position=1, end_position=6,
                            summary_text="outer", actor=actor)
    assert working(thread)[0] == (1, "outer")
    with pytest.raises(Conflict) as info:
        collapse_undo(collapse=inner, actor=actor)
    assert info.value.code == "nested_collapse"
    collapse_undo(collapse=outer, actor=actor)
    assert (3, "inner") in working(thread)
    collapse_undo(collapse=inner, actor=actor)
    assert [p for p, _ in working(thread)] == list(range(1, 9))


def test_a_range_without_active_events_changes_nothing(thread, actor):
    # (a range or a text out of shape is the doors': tests/views/test_shape_doors.py)
    event_append(thread=thread, events=messages(3), actor=actor)
    with pytest.raises(InvalidInput):
        collapse_create(thread=thread, start_position=100, end_position=200, summary_text="s", actor=actor)
    assert not Collapse.objects.exists() and thread.events.count() == 3


def test_a_collapse_for_a_job_is_made_once(thread, actor):
    from contextstore.models import Job

    event_append(thread=thread, events=messages(4), actor=actor)
    job = Job.objects.create(workspace=thread.workspace, thread=thread, kind="range")
    a = collapse_create(thread=thread, start_position=1, end_position=2,
                        summary_text="s", actor=actor, job=job)
    b = collapse_create(thread=thread, start_position=1, end_position=2,
                        summary_text="s", actor=actor, job=job)
    assert a.pk == b.pk and Collapse.objects.count() == 1


def test_a_cleared_summary_cannot_be_undone(thread, actor):
    event_append(thread=thread, events=messages(4), actor=actor)
    collapse = collapse_create(thread=thread, start_position=1, end_position=2, summary_text="s", actor=actor)
    thread_clear_context(thread=thread, actor=actor)
    with pytest.raises(Conflict):
        collapse_undo(collapse=collapse, actor=actor)


names = itertools.count()
ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 4)),
        st.tuples(st.just("collapse"), st.integers(0, 30), st.integers(0, 30)),
        st.tuples(st.just("undo")),
    ),
    min_size=1, max_size=14,
)


@given(ops=ops)
def test_undo_restores_exactly_the_previous_working_context(session, actor, ops):
    thread, _ = thread_ensure(session=session, name=f"prop-{next(names)}", actor=actor)
    event_append(thread=thread, events=messages(3, words=5), actor=actor)
    stack: list[tuple[Collapse, list]] = []
    for op in ops:
        if op[0] == "append":
            event_append(thread=thread, events=messages(op[1], words=5), actor=actor)
        elif op[0] == "collapse":
            positions = [p for p, _ in working(thread)]
            a, b = sorted((op[1] % len(positions), op[2] % len(positions)))
            before = working(thread)
            collapse = collapse_create(thread=thread, start_position=positions[a], end_position=positions[b],
                                       summary_text=f"summary {len(stack)}", actor=actor)
            stack.append((collapse, before))
            assert len(working(thread)) == len(before) - (b - a + 1) + 1
        elif stack:
            collapse, before = stack.pop()
            # appends after the collapse stay; everything else is exactly as before
            collapse_undo(collapse=collapse, actor=actor)
            now = working(thread)
            assert now[: len(before)] == before
            assert all(p > before[-1][0] for p, _ in now[len(before):])
        assert_counters_match(thread)


def test_a_summary_larger_than_an_event_may_be_is_refused(thread, actor, settings):
    from contextstore.errors import PayloadTooLarge

    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "MAX_EVENT_CONTENT_BYTES": 10}
    event_append(thread=thread, events=[{"type": "Message", "content": "short"}] * 2, actor=actor)
    with pytest.raises(PayloadTooLarge):
        collapse_create(thread=thread, start_position=1, end_position=2, summary_text="x" * 11, actor=actor)
    assert not Collapse.objects.exists()
