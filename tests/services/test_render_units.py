"""Provider-valid renders: tool units kept whole, oversize events skipped and reported."""

from dataclasses import replace

from contextstore.selectors import rendering
from contextstore.services.events import event_append
from contextstore.tokens import FRAME_TOKENS, count_tokens
from tests.conftest import messages


def history(render):
    return [m for m in render["messages"] if m["section"] == "history"]


def call(i, name="search", **args):
    return {"type": "ToolCall", "content": "", "data": {"id": f"c{i}", "name": name,
                                                         "arguments": args or {"q": f"q{i}"}}}


def result(i, text="found it"):
    return {"type": "ToolResult", "content": text, "data": {"tool_call_id": f"c{i}"}}


def append(thread, actor, events):
    event_append(thread=thread, events=events, actor=actor)
    thread.refresh_from_db()


def test_a_tool_call_keeps_name_and_arguments_in_its_message_and_tokens(thread, actor):
    append(thread, actor, [{"type": "Message", "content": "weather?"}, call(1, q="weather in Paris")])
    event = thread.events.get(seq=2)
    assert event.token_count == count_tokens('search({"q":"weather in Paris"})')
    append(thread, actor, [result(1)])
    render = rendering.context_render(thread=thread, max_tokens=1000)
    first = history(render)[1]
    assert first["tool_calls"] == [{"id": "c1", "name": "search",
                                    "arguments": {"q": "weather in Paris"}}]
    assert first["tokens"] == event.token_count > 0
    assert history(render)[2]["tool_call_id"] == "c1"


def test_a_call_and_all_its_results_are_left_out_together_with_their_turn(thread, actor):
    append(thread, actor, messages(2, words=10) + [
        {"type": "ToolCall", "data": {"tool_calls": [
            {"id": "a", "name": "f", "arguments": {}}, {"id": "b", "name": "g", "arguments": {}}]}},
        result("x", "one " * 40) | {"data": {"tool_call_id": "a"}},
        result("x", "two " * 40) | {"data": {"tool_call_id": "b"}},
        {"type": "Message", "content": "thanks"}])
    # each event framed, as the render counts it (tokens.request_tokens)
    tokens = {e.seq: e.token_count + FRAME_TOKENS for e in thread.events.all()}
    # room for the newest message and the second result, not for the whole unit: the turn it
    # belongs to (the user message 1 through its last result) goes whole
    budget = tokens[6] + tokens[5] + 1
    render = rendering.context_render(thread=thread, max_tokens=budget)
    assert [m["seq"] for m in history(render)] == [6]
    assert render["stats"]["fits"] is False
    assert [(s["seq"], s["tokens"], s["reason"]) for s in render["stats"]["skipped"]] == [
        (n, tokens[n] - FRAME_TOKENS, "oversize") for n in (5, 4, 3, 2, 1)]
    # with room for both turns, all of it comes
    render = rendering.context_render(thread=thread, max_tokens=sum(tokens.values()))
    assert [m["seq"] for m in history(render)] == [1, 2, 3, 4, 5, 6]
    assert render["stats"]["fits"] is True


def test_a_render_never_starts_with_an_orphan_result(thread, actor):
    # the call was collapsed away (or never logged): its result alone is dropped, reported
    append(thread, actor, [result(9), {"type": "Message", "content": "next"}])
    render = rendering.context_render(thread=thread, max_tokens=1000)
    assert [m["type"] for m in history(render)] == ["Message"]
    assert render["stats"]["skipped"] == [
        {"seq": 1, "position": 1, "tokens": render["stats"]["skipped"][0]["tokens"],
         "reason": "orphan_tool_result"}]
    assert render["stats"]["fits"] is True  # left out as invalid, not for size


def test_an_unanswered_call_is_left_out(thread, actor):
    append(thread, actor, [{"type": "Message", "content": "hi"}, call(1)])
    render = rendering.context_render(thread=thread, max_tokens=1000)
    assert [m["type"] for m in history(render)] == ["Message"]
    assert render["stats"]["skipped"][0]["reason"] == "unanswered_tool_call"


def test_a_huge_newest_event_is_skipped_and_older_history_still_comes(thread, actor):
    append(thread, actor, messages(5, words=20) + [
        {"type": "ToolResult", "content": "x " * 30_000, "data": {"tool_call_id": "big"}}])
    # a huge plain message (not a tool result) after them
    append(thread, actor, [{"type": "Message", "content": "log " * 30_000},
                           {"type": "Message", "content": "what now?"}])
    # the sliding walk (start_chunk=0): older turns still come behind the skipped one
    render = rendering.context_render(thread=thread, max_tokens=8000, start_chunk=0)
    seqs = [m["seq"] for m in history(render)]
    assert seqs == [1, 2, 3, 4, 5, 8]
    stats = render["stats"]
    assert stats["fits"] is False and stats["total_tokens"] <= 8000
    # the huge result answers no call: left out as a provider would refuse it, not for size
    assert {s["seq"]: s["reason"] for s in stats["skipped"]} == {7: "oversize", 6: "orphan_tool_result"}
    assert next(s for s in stats["skipped"] if s["seq"] == 7)["tokens"] > 8000
    # a stable start (the default) is past the huge events: they push it forward, never back
    stable = rendering.context_render(thread=thread, max_tokens=8000)
    assert [m["seq"] for m in history(stable)] == [8]
    assert {s["seq"]: s["reason"] for s in stable["stats"]["skipped"]} == {
        7: "oversize", 6: "orphan_tool_result", 5: "window_start"}


def test_on_oversize_stop_ends_history_at_the_first_event_that_does_not_fit(thread, actor):
    append(thread, actor, messages(3, words=20) + [
        {"type": "Message", "content": "log " * 20_000}, {"type": "Message", "content": "now"}])
    render = rendering.context_render(thread=thread, max_tokens=8000, on_oversize="stop")
    assert [m["seq"] for m in history(render)] == [5]
    assert [(s["seq"], s["reason"]) for s in render["stats"]["skipped"]] == [(4, "stop")]
    assert render["stats"]["fits"] is False
    assert render["stats"]["sections"]["history"]["older_not_examined"] is True


def test_fits_is_true_only_when_nothing_was_left_out(thread, actor):
    append(thread, actor, messages(4, words=10))
    everything = rendering.context_render(thread=thread, max_tokens=10_000)["stats"]
    some = rendering.context_render(thread=thread, max_tokens=30)["stats"]
    assert everything["fits"] is True and everything["skipped"] == []
    assert some["fits"] is False and some["skipped"]


def test_thinking_follows_strip_thinking(thread, actor):
    append(thread, actor, [{"type": "Message", "content": "why?"}, {"type": "LLMOutput", "parts": [
        {"type": "thinking", "thinking": "hmm " * 20, "signature": "sig"},
        {"type": "text", "text": "answer"}]}])
    kept = rendering.context_render(thread=thread, max_tokens=1000, fmt="anthropic")
    gone = rendering.context_render(thread=thread, max_tokens=1000, fmt="anthropic", strip_thinking=True)
    assert [b["type"] for b in kept["messages"][1]["content"]] == ["thinking", "text"]
    assert [b["type"] for b in gone["messages"][1]["content"]] == ["text"]
    assert gone["stats"]["total_tokens"] < kept["stats"]["total_tokens"]
    openai = rendering.context_render(thread=thread, max_tokens=1000, fmt="openai")
    assert openai["messages"] == [{"role": "user", "content": "why?"},
                                  {"role": "assistant", "content": "answer"}]


def test_the_render_reuses_the_walks_units_only_for_exactly_the_events_it_planned(thread, actor):
    """valid_items takes the walk's units (rendering.walked_units) instead of grouping again
    only when the loaded events are the planned ones, by id, with no gap between them."""
    append(thread, actor, messages(2, words=5) + [call(1), result(1), {"type": "Message", "content": "ok"}])
    planned = rendering.render_plan(thread=thread, max_tokens=1000, reuse=False)
    events = rendering.load_planned(thread=thread, plan=planned.plan)
    assert rendering.walked_units(planned.plan, events) is planned.plan.units
    assert rendering.walked_units(planned.plan, events[1:]) is None  # one was gone when loaded
    swapped = [replace(events[0], pk=events[1].pk), *events[1:]]
    assert rendering.walked_units(planned.plan, swapped) is None  # another event at its place
    # an orphan result left out inside the window: grouped again
    append(thread, actor, [result(9), {"type": "Message", "content": "and?"}])
    planned = rendering.render_plan(thread=thread, max_tokens=1000, reuse=False)
    events = rendering.load_planned(thread=thread, plan=planned.plan)
    assert [x["reason"] for x in planned.plan.left_out] == ["orphan_tool_result"]
    assert rendering.walked_units(planned.plan, events) is None
    assert history(rendering.context_render(thread=thread, max_tokens=1000))[-1]["content"] == "and?"
