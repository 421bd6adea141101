import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextstore.errors import Conflict, InvalidInput
from contextstore.models import AuditLog, Clear, Event, Thread
from contextstore.selectors import rendering, windows
from contextstore.services.blocks import block_upsert
from contextstore.services.collapses import collapse_create, collapse_undo
from contextstore.services.events import event_append
from contextstore.services.sessions import thread_ensure
from contextstore.services.state import state_write
from contextstore.services.threads import thread_clear_context, thread_fork
from contextstore.tokens import count_tokens
from tests.conftest import messages


def test_a_clear_of_nothing_writes_no_state_revision(thread, actor):
    state_write(thread=thread, actor=actor, state={"goal": "x"})
    thread.refresh_from_db()
    revision, revisions = thread.revision, thread.state_revisions.count()
    assert thread_clear_context(thread=thread, actor=actor).event_count == 0
    thread.refresh_from_db()
    assert (thread.revision, thread.state_revisions.count()) == (revision, revisions)
    # with events: a change a framework's save from before it must see (sync's base_revision)
    event_append(thread=thread, events=messages(2), actor=actor)
    assert thread_clear_context(thread=thread, actor=actor).event_count == 2
    thread.refresh_from_db()
    assert (thread.revision, thread.state_revisions.count()) == (revision + 1, revisions + 1)


def test_clear_context_empties_the_working_context_and_keeps_everything_else(thread, actor):
    event_append(thread=thread, events=messages(5), actor=actor)
    collapse_create(thread=thread, start_position=1, end_position=2, summary_text="s", actor=actor)
    state_write(thread=thread, actor=actor, summary="compacted", state={
        "tasks": [{"id": 1}], "permissions": {"allow": ["x"]}, "plan_mode": {"active": True},
        "tools": {"activated_groups": ["fs"]}})
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    thread.refresh_from_db()
    revision = thread.revision

    cleared = thread_clear_context(thread=thread, actor=actor).event_count

    thread.refresh_from_db()
    assert cleared == 4  # 3 remaining originals + the summary
    assert thread.summary == "" and thread.revision == revision + 1
    assert thread.state["tasks"] == [{"id": 1}] and thread.state["permissions"] == {"allow": ["x"]}
    assert Event.objects.filter(thread=thread).count() == 6  # nothing deleted
    assert set(Event.objects.filter(thread=thread).values_list("status", flat=True)) == {
        "cleared", "collapsed"}
    render = rendering.context_render(thread=thread, max_tokens=1000)
    assert [m["section"] for m in render["messages"]] == ["prefix"]
    assert (thread.active_event_count, thread.active_tokens) == (0, 0)
    clear = Clear.objects.get(thread=thread)
    assert (clear.event_count, clear.summary, clear.members.count()) == (4, "compacted", 4)
    assert AuditLog.objects.get(action="thread.clear_context").details == {
        "clear": clear.pk, "cleared": 4, "summary_chars": 9}
    event_append(thread=thread, events=messages(1), actor=actor)
    thread.refresh_from_db()
    assert thread.last_seq == 7 and thread.active_event_count == 1


def test_fork_copies_the_position_range_both_ends_included(thread, actor):
    event_append(thread=thread, events=messages(6), actor=actor)
    state_write(thread=thread, state={"k": 1}, actor=actor)
    block_upsert(thread=thread, name="persona", value="x", placement="prefix", actor=actor)
    fork = thread_fork(thread=thread, name="alt", start_position=2, end_position=4, system_prompt="new",
                       actor=actor)
    assert list(fork.events.order_by("seq").values_list("seq", "content")) == [
        (1, "turn 1: " + " ".join(["context"] * 56)), (2, "turn 2: " + " ".join(["context"] * 56)),
        (3, "turn 3: " + " ".join(["context"] * 56))]
    assert (fork.parent_id, fork.fork_start_position, fork.fork_end_position) == (thread.pk, 2, 4)
    assert fork.state == {"k": 1} and fork.system_prompt == "new"
    assert fork.blocks.get().value == "x"
    assert (fork.last_seq, fork.active_event_count) == (3, 3)
    thread.session.refresh_from_db()
    assert thread.session.thread_count == 2


def test_fork_with_open_ends_copies_the_working_context(thread, actor):
    event_append(thread=thread, events=messages(4), actor=actor)
    collapse_create(thread=thread, start_position=1, end_position=2, summary_text="early", actor=actor)
    fork = thread_fork(thread=thread, name="all", actor=actor)
    assert list(fork.events.filter(status="active").order_by("position")
                .values_list("type", flat=True)) == ["Summary", "Message", "Message"]
    # The collapse came along with its originals, and can be undone in the fork.
    copy = fork.collapses.get()
    assert list(copy.members.values_list("seq", "status")) == [(1, "collapsed"), (2, "collapsed")]
    collapse_undo(collapse=copy, actor=actor)
    assert list(fork.events.filter(status="active").order_by("position")
                .values_list("seq", flat=True)) == [1, 2, 3, 4]


def test_fork_refuses_a_taken_name(thread, actor):
    with pytest.raises(Conflict):
        thread_fork(thread=thread, name="main", actor=actor)
    with pytest.raises(InvalidInput):
        thread_fork(thread=thread, name="x", start_position=5, end_position=2, actor=actor)
    assert Thread.objects.count() == 1


def test_total_tokens_count_the_special_slots_and_the_working_context(thread, actor):
    event_append(thread=thread, events=messages(3), actor=actor)
    Thread.objects.filter(pk=thread.pk).update(document={
        **thread.document, "system_prompt": "You are helpful.", "tool_definitions": [{"name": "search"}]})
    thread.refresh_from_db()
    expected = (count_tokens("You are helpful.") + count_tokens('[{"name": "search"}]')
                + sum(Event.objects.filter(thread=thread).values_list("token_count", flat=True)))
    assert windows.total_tokens(thread=thread) == expected


names = itertools.count()


@given(sizes=st.lists(st.integers(1, 40), min_size=0, max_size=15),
       runtime=st.lists(st.booleans(), max_size=15), count=st.integers(0, 20),
       budget=st.integers(0, 200))
def test_windows_match_a_plain_list_implementation(session, actor, sizes, runtime, count, budget):
    thread, _ = thread_ensure(session=session, name=f"w-{next(names)}", actor=actor)
    if sizes:
        event_append(thread=thread, actor=actor, events=[
            {"type": "LLMCallEnd" if i < len(runtime) and runtime[i] else "Message",
             "content": " ".join(["word"] * n)} for i, n in enumerate(sizes)])
    thread.refresh_from_db()
    visible = list(Event.objects.filter(thread=thread, visible=True).order_by("position"))

    by_count = windows.window_by_count(thread=thread, count=count)
    expected = visible[-count:]  # count 0: all of it, as peteos' entries[-0:]
    assert [e.seq for e in by_count["events"]] == [e.seq for e in expected]
    assert by_count["covers_all"] == (len(visible) <= count)

    by_tokens = windows.window_by_tokens(thread=thread, max_tokens=budget)
    kept, used = [], 0
    for e in reversed(visible):
        if used + e.token_count > budget:
            break
        used += e.token_count
        kept.insert(0, e)
    assert [e.seq for e in by_tokens["events"]] == [e.seq for e in kept]
    assert by_tokens["covers_all"] == (sum(e.token_count for e in visible) <= budget)
