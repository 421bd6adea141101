"""Cache-stable starts: as a thread grows, its render's start only moves forward: when the
floor (rendering.window_floor) moves, by whole chunks, or once between when the turn reaching
back over it stops fitting; older turns are never pulled
back in front of it, whatever on_oversize says. Any other change to the working context (clear,
collapse, a fork's new thread) recounts its tokens and may move the start anywhere once."""

import itertools

from django.db.models import Count, Sum
from hypothesis import given
from hypothesis import strategies as st

from contextstore.models import Event
from contextstore.selectors import rendering
from contextstore.services.events import event_append
from contextstore.services.sessions import thread_ensure
from contextstore.services.threads import thread_clear_context
from contextstore.tokens import FRAME_TOKENS

names = itertools.count()


def words(n: int) -> str:
    return " ".join(f"w{i % 50}" for i in range(n))


turn = st.tuples(
    st.integers(1, 200),  # the user's message
    st.lists(st.tuples(st.integers(1, 2), st.integers(0, 500)), max_size=2),  # tool rounds
    st.integers(1, 200),  # the answer
    st.integers(0, 9),  # 0: the user's message is oversized (pasted file)
)


def append_turn(thread, actor, spec, tag) -> None:
    user, rounds, answer, big = spec
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": words(user if big else 2500)}])
    for r, (k, size) in enumerate(rounds):
        calls = [{"id": f"t{tag}_{r}_{i}", "name": "lookup", "arguments": {"q": "x"}} for i in range(k)]
        event_append(thread=thread, actor=actor, events=[
            {"type": "ToolCall", "content": "calling", "data": {"tool_calls": calls}},
            *({"type": "ToolResult", "content": words(size), "data": {"tool_call_id": c["id"]}}
              for c in calls)])
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMOutput", "role": "assistant", "content": words(answer)}])


def offset_of(thread, position: int) -> int:
    """Tokens of the working context before `position`, each event framed as a render counts it."""
    got = Event.objects.filter(thread=thread, status=Event.Status.ACTIVE, visible=True,
                               position__lt=position).aggregate(t=Sum("token_count"), n=Count("pk"))
    return (got["t"] or 0) + FRAME_TOKENS * got["n"]


def start_of(rendered) -> int | None:
    positions = [i.event.position for unit in rendered.units for i in unit]
    return min(positions) if positions else None


@given(turns=st.lists(turn, min_size=1, max_size=9), budget=st.integers(300, 2500),
       chunk=st.sampled_from([0.1, 0.25, 0.5]), on_oversize=st.sampled_from(["skip", "stop"]))
def test_a_growing_threads_start_only_moves_forward_by_whole_chunks(session, actor, turns, budget,
                                                                      chunk, on_oversize):
    thread = thread_ensure(session=session, name=f"s{next(names)}", actor=actor)[0]
    last_start, last_floor = None, 0
    for n, spec in enumerate(turns):
        append_turn(thread, actor, spec, n)
        thread.refresh_from_db()
        rendered = rendering.render(thread=thread, max_tokens=budget, start_chunk=chunk,
                                    on_oversize=on_oversize)
        stats = rendered.body["stats"]
        assert stats["start_chunk"] == chunk and stats["total_tokens"] <= budget
        floor = rendering.window_floor(rendering.working_tokens(thread), budget, chunk)
        assert floor >= last_floor and (floor == last_floor or floor - last_floor >= int(budget * chunk))
        start = start_of(rendered)
        if start is None:
            continue
        if last_start is not None:
            assert start >= last_start, "the start moved back"
            if start > last_start and floor == last_floor:
                # between floor moves only once: the turn reaching back over the floor stopped fitting
                assert offset_of(thread, last_start) < floor <= offset_of(thread, start)
        last_start, last_floor = start, floor


def test_a_large_turn_never_pulls_older_turns_back_in_front_of_the_start(thread, actor):
    # small turns (~200 tokens), one large turn (~1,100) that fits alone, small turns again: the
    # sliding walk takes the large one while it is among the newest, then skips it and pulls
    # older turns back in behind it (the start moves back); the stable start never does.
    sizes = [50] * 10 + [500] + [50] * 6
    starts, sliding = [], []
    for n, size in enumerate(sizes):
        append_turn(thread, actor, (size, [], 50, 1), n)
        thread.refresh_from_db()
        starts.append(start_of(rendering.render(thread=thread, max_tokens=1500, start_chunk=0.25)))
        sliding.append(start_of(rendering.render(thread=thread, max_tokens=1500, start_chunk=0)))
    assert sliding != sorted(sliding), "the sliding walk moved its start back"
    assert starts == sorted(starts)


def test_skip_leaves_out_an_oversized_turn_and_nothing_older_comes_instead(thread, actor):
    for n in range(12):
        append_turn(thread, actor, (150, [], 150, 1), n)
    thread.refresh_from_db()
    before = rendering.render(thread=thread, max_tokens=1500, start_chunk=0.25)
    append_turn(thread, actor, (0, [], 0, 0), 99)  # a 5,000-token message, larger than the budget
    thread.refresh_from_db()
    after = rendering.render(thread=thread, max_tokens=1500, start_chunk=0.25)
    stats = after.body["stats"]
    assert {s["reason"] for s in stats["skipped"]} == {"oversize", "window_start"}
    assert stats["fits"] is False and stats["sections"]["history"]["older_not_examined"]
    assert start_of(before) is not None and start_of(after) is None
    # the sliding walk would have shown the older turns again
    assert start_of(rendering.render(thread=thread, max_tokens=1500, start_chunk=0)) is not None


def test_the_start_holds_over_many_calls_where_the_sliding_walk_moves_it_every_turn(thread, actor):
    starts, sliding = [], []
    for n in range(60):
        append_turn(thread, actor, (20, [(1, 10)], 20, 1), n)  # turns well under a chunk
        thread.refresh_from_db()
        starts.append(start_of(rendering.render(thread=thread, max_tokens=1500, start_chunk=0.25)))
        sliding.append(start_of(rendering.render(thread=thread, max_tokens=1500, start_chunk=0)))
    assert starts == sorted(starts) and sliding == sorted(sliding)
    # the chunked start changes far less often than the sliding one
    assert len(set(starts)) * 2 < len(set(sliding))


def test_clearing_the_thread_resets_the_start(thread, actor):
    for n in range(20):
        append_turn(thread, actor, (150, [], 150, 1), n)
    thread.refresh_from_db()
    assert start_of(rendering.render(thread=thread, max_tokens=800, start_chunk=0.25)) > 1
    thread_clear_context(thread=thread, actor=actor)
    append_turn(thread, actor, (10, [], 10, 1), 99)
    thread.refresh_from_db()
    rendered = rendering.render(thread=thread, max_tokens=800, start_chunk=0.25)
    assert [i.event.content for unit in rendered.units for i in unit][0] == words(10)


def test_the_setting_gives_the_default_chunk(thread, actor, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "RENDER_START_CHUNK_PERCENT": 10}
    append_turn(thread, actor, (5, [], 5, 1), 0)
    thread.refresh_from_db()
    assert rendering.render(thread=thread, max_tokens=500).body["stats"]["start_chunk"] == 0.1


def test_the_cache_bench_finds_stable_starts_never_move_back_and_cache_more():
    from contextstore.bench.cache_starts import measure, sessions

    shapes = {s.shape for s in sessions(10)}
    assert shapes == {"openai", "anthropic"}
    results = measure([0, 0.25], count=10)
    assert results[0].backward > 0 and results[0.25].backward == 0
    assert results[0.25].cached_share > results[0].cached_share


def test_an_orphan_result_counts_in_the_offsets_the_start_is_placed_by():
    # rows newest first: (position, seq, tokens, thinking, type, role, id); turns of 100 tokens
    # and an orphan result of 300 at position 5, each framed (+4): 1,240 tokens, the floor at 715
    # (chunk 55)
    rows = []
    for p in range(1, 11):
        rows.insert(0, (p, p, 300 if p == 5 else 100, 0, "ToolResult" if p == 5 else "Message",
                        "tool" if p == 5 else "user", p))
    total = sum(r[2] + FRAME_TOKENS for r in rows)
    plan = rendering.plan_history(budget=550, strip_thinking=False, newest=rows, start_chunk=0.1,
                                  total=total, upto_seq=10)
    assert rendering.window_floor(total, 550, 0.1) == 715
    # turns 6–10 start at 720–1,136; turn 4 spans 312–416, wholly before the floor (had the
    # orphan's tokens not been counted it would seem to reach over it, at 616–720)
    assert sorted(r.position for unit in plan.units for r in unit) == [6, 7, 8, 9, 10]
    reasons = {x["position"]: x["reason"] for x in plan.left_out}
    assert reasons == {5: "orphan_tool_result", 4: "window_start"}
