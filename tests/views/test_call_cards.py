"""LLM calls as cards: one card per LLMCallStart…LLMComplete, "as sent", diff with the previous."""

import re

from contextstore.models import Run
from contextstore.selectors import rendering, timeline
from contextstore.selectors.waterfall import run_waterfall
from contextstore.services.blocks import block_upsert
from contextstore.services.events import event_append
from contextstore.services.renders import render_record
from tests.conftest import messages
from tests.views.conftest import HTMX

XSS = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def cards(html: str) -> list[str]:
    return re.findall(r'<article class="call-card[^"]*" id="e(\d+)"', html)


def seqs(html: str) -> list[int]:
    return [int(s) for s in re.findall(r'data-seq="(\d+)"', html)]


def call(model: str = "gpt-4o", *, call_id: str = "", sent: list | None = None,
         start_at: str = "2026-01-05T10:00:00Z", end_at: str = "2026-01-05T10:00:02.500Z",
         **usage) -> list[dict]:
    start: dict = {"model": model}
    if sent is not None:
        start["messages"] = sent
    return [{"type": "LLMCallStart", "call_id": call_id, "data": start, "occurred_at": start_at},
            {"type": "LLMComplete", "call_id": call_id, "occurred_at": end_at,
             "data": {"model": model, **usage}}]


def test_a_call_is_one_card_with_model_tokens_latency_cost_and_finish(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "hi"},
        {"type": "BeforeAgentCall"},
        *call(input_tokens=1234, output_tokens=80, cost=0.0123, finish_reason="stop"),
    ])
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert cards(html) == ["3"]  # the card stands at its LLMCallStart; the end is folded in
    assert seqs(html) == [1, 3]  # BeforeAgentCall stays behind "runtime events"
    card = html[html.index('id="e3"'):]
    card = card[:card.index("</article>")]
    for text in ("#3–#4", "gpt-4o", "1.2k", "80", "2.5 s", "$0.01", "stop", "As sent",
                 "Diff with previous call", f"/threads/{thread.pk}/calls/3/sent/"):
        assert text in card, text


def test_an_openai_usage_object_shows_its_tokens_on_the_card_and_in_the_runs_totals(editor_client, thread,
                                                                                     actor):
    from openai.types import CompletionUsage
    usage = CompletionUsage(prompt_tokens=1234, completion_tokens=87, total_tokens=1321).model_dump()
    event_append(thread=thread, actor=actor, events=[
        {**event, "run_id": "r1"} for event in call(usage=usage)])
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    card = html[html.index('id="e1"'):]
    card = card[:card.index("</article>")]
    assert "1.2k" in card and "87" in card  # its output was 0
    run = Run.objects.get(thread=thread, run_id="r1")
    assert (run.input_tokens, run.output_tokens) == (1234, 87)


def test_calls_pair_by_call_id_across_interleaving_and_pages(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "call_id": "a", "data": {"model": "m-a"},
         "occurred_at": "2026-01-05T10:00:00Z"},
        {"type": "LLMCallStart", "call_id": "b", "data": {"model": "m-b"},
         "occurred_at": "2026-01-05T10:00:01Z"},
        {"type": "LLMComplete", "call_id": "b", "data": {}, "occurred_at": "2026-01-05T10:00:02Z"},
        *messages(60),
        {"type": "LLMComplete", "call_id": "a", "data": {}, "occurred_at": "2026-01-05T10:01:00Z"},
    ])
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    newest = html[html.index('id="e64"'):]
    # the start is on an older page: its end is a slim row that links to the card
    end = newest[:newest.index("</article>")]
    assert cards(html) == [] and '<article class="call-end" id="e64"' in html
    assert "#1–#64" in end and "1 min 0 s" in end
    assert "?around=1#e1" in end
    older = editor_client.get(f"/threads/{thread.pk}/", {"before": 15}, **HTMX).content.decode()
    assert cards(older) == ["1", "2"]  # both at their starts
    assert "#2–#3" in older and "m-b" in older and "#1–#64" in older
    # a's end is on the newer page: its card says so and links on
    a_card = older[older.index('id="e1"'):older.index('id="e2"')]
    assert "data-continues" in a_card and "?around=64#e64" in a_card and "?call=a" in a_card


def test_as_sent_shows_the_messages_the_agent_attached_escaped(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=call(
        XSS, sent=[{"role": "system", "content": "be brief"}, {"role": "user", "content": XSS}],
        finish_reason=XSS))
    page = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    html = editor_client.get(f"/threads/{thread.pk}/calls/1/sent/", **HTMX).content.decode()
    assert "<html" not in html and "be brief" in html and "attached" in html
    assert "<script>alert" not in html and "&lt;script&gt;alert(2)" in html
    # the end's seq names the same call; a full page works without JavaScript
    full = editor_client.get(f"/threads/{thread.pk}/calls/2/sent/").content.decode()
    assert "<html" in full and "be brief" in full


def test_as_sent_rebuilds_the_render_record_the_call_names(editor_client, thread, actor):
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(3))
    record = render_record(thread=thread, rendered=rendering.render(thread=thread, max_tokens=10_000),
                           actor=actor)
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "gpt-4o", "render_id": str(record.pk)}},
        {"type": "LLMComplete", "data": {"model": "gpt-4o", "input_tokens": 50}},
    ])
    html = editor_client.get(f"/threads/{thread.pk}/calls/4/sent/", **HTMX).content.decode()
    assert str(record.pk) in html and "## persona\nBe brief." in html
    assert html.count('data-message="') == 4 and "4/4" in html  # the prefix, then 3 messages


def test_as_sent_says_when_nothing_was_attached(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=call())
    html = editor_client.get(f"/threads/{thread.pk}/calls/1/sent/", **HTMX).content.decode()
    assert "what it sent is unknown" in html
    page = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert "no render record or messages attached" in page


def test_diff_with_the_previous_call_lists_what_changed_entered_and_left_and_the_cache(editor_client, thread,
                                                                                      actor):
    system = {"role": "system", "content": "be brief"}
    q1, a1, q2 = ({"role": "user", "content": "first question"},
                  {"role": "assistant", "content": "first answer"},
                  {"role": "user", "content": "second question"})
    event_append(thread=thread, actor=actor, events=[
        *call(sent=[system, q1]), *call(sent=[system, q1, a1, q2]),
        *call(sent=[{"role": "system", "content": "be long"}, q2])])
    first = editor_client.get(f"/threads/{thread.pk}/calls/1/diff/", **HTMX).content.decode()
    assert "first LLM call of the thread" in first
    grown = editor_client.get(f"/threads/{thread.pk}/calls/3/diff/", **HTMX).content.decode()
    # a few dozen tokens: under OpenAI's 1024-token minimum, nothing is cached at all
    assert 'data-cache="short"' in grown and 'data-cause="append"' in grown and "2 → 4 tools" in grown
    entered = grown[grown.index("<h2>Entered</h2>"):grown.index("<h2>Left</h2>")]
    assert "first answer" in entered and "second question" in entered and "first question" not in entered
    assert "nothing" in grown[grown.index("<h2>Left</h2>"):]
    rewritten = editor_client.get(f"/threads/{thread.pk}/calls/5/diff/", **HTMX).content.decode()
    assert 'data-cause="system_edit"' in rewritten and "First difference: <b>message 1 (system" in rewritten
    changed = rewritten[rewritten.index("<h2>Changed</h2>"):rewritten.index("<h2>Entered</h2>")]
    # the system prompt's words, not its two whole texts
    assert '<del class="d-del">brief</del><ins class="d-add">long</ins>' in changed
    left = rewritten[rewritten.index("<h2>Left</h2>"):]
    assert "first answer" in left and "second question" not in left and "be brief" not in left


def _call_with_render(thread, actor) -> None:
    record = render_record(thread=thread, rendered=rendering.render(thread=thread, max_tokens=10_000),
                           actor=actor)
    event_append(thread=thread, actor=actor,
                 events=[{"type": "LLMCallStart", "data": {"render_id": str(record.pk)}}])


def test_diff_of_two_recorded_renders_shows_blocks_and_events(editor_client, thread, actor):
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(2))
    _call_with_render(thread, actor)
    block_upsert(thread=thread, name="persona", value="Be long.", placement="prefix", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(1, start=2))
    _call_with_render(thread, actor)
    html = editor_client.get(f"/threads/{thread.pk}/calls/5/diff/", **HTMX).content.decode()
    assert "persona changed v1→v2" in html and "prefix hash" not in html
    assert 'data-cause="block_edit"' in html and "events added</dt><dd>1 #4" in html
    assert "block “persona” edited v1→v2" in html


def test_call_views_are_404_for_other_workspaces_and_non_calls(editor_client, outsider_client, thread,
                                                               actor):
    event_append(thread=thread, actor=actor, events=[{"type": "Message", "content": "hi"}, *call()])
    for path in ("calls/2/sent/", "calls/2/diff/"):
        assert editor_client.get(f"/threads/{thread.pk}/{path}").status_code == 200
        assert outsider_client.get(f"/threads/{thread.pk}/{path}").status_code == 404
    assert editor_client.get(f"/threads/{thread.pk}/calls/1/sent/").status_code == 404
    assert editor_client.get(f"/threads/{thread.pk}/calls/99/diff/").status_code == 404


# ------------------------------------------------------------------ what a call produced, in its card

def at(second: float) -> str:
    return f"2026-01-05T10:00:{second:06.3f}Z"


def weather_turn() -> list[dict]:
    """A call that thinks, calls two tools (the second never answered) and replies."""
    run = {"run_id": "r1"}
    return [
        {"type": "Message", "role": "user", "content": "Weather in Paris?", **run},
        {"type": "LLMCallStart", "call_id": "c1", "data": {"model": "gpt-4o"}, "occurred_at": at(0), **run},
        {"type": "Reasoning", "role": "assistant", "call_id": "c1", "content": "", **run,
         "parts": [{"type": "thinking", "thinking": "Check the forecast, then the clock."}]},
        {"type": "ToolCall", "role": "assistant", "call_id": "c1", "content": "", **run, "occurred_at": at(1),
         "parts": [{"type": "tool_call", "id": "t1", "name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"type": "ToolCall", "role": "assistant", "call_id": "c1", "content": "", **run, "occurred_at": at(1),
         "parts": [{"type": "tool_call", "id": "t2", "name": "get_time", "arguments": {}}]},
        # no call_id: it finds its card by the tool call it answers
        {"type": "ToolResult", "role": "tool", "content": "18 C and sunny", "data": {"tool_call_id": "t1"},
         "occurred_at": at(1.4), **run},
        {"type": "LLMOutput", "role": "assistant", "call_id": "c1", "content": f"Sunny. {XSS}", **run},
        {"type": "LLMComplete", "call_id": "c1", "occurred_at": at(2.5), **run,
         "data": {"model": "gpt-4o", "input_tokens": 900, "output_tokens": 40,
                  "finish_reason": "tool_calls"}},
        {"type": "Message", "role": "user", "content": "Thanks", **run},
    ]


def test_a_call_card_stands_at_its_start_and_holds_thinking_tool_calls_results_and_reply(editor_client,
                                                                                         thread, actor):
    event_append(thread=thread, actor=actor, events=weather_turn())
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert cards(html) == ["2"]
    # reasoning, then each tool call with its result nested under it, then the reply; the user's
    # messages stay rows around the card
    assert seqs(html) == [1, 2, 3, 4, 6, 5, 7, 9]
    card = html[html.index('id="e2"'):html.index('id="e9"')]
    assert "Check the forecast, then the clock." in card and "<summary>thinking</summary>" in card
    weather = card[card.index('data-tool="4"'):card.index('data-tool="5"')]
    assert "get_weather" in weather and "18 C and sunny" in weather
    assert "1 result" in weather and "400 ms" in weather
    missing = card[card.index('data-tool="5"'):]
    assert "get_time" in missing and "no result logged" in missing[:missing.index("</section>")]
    assert "Sunny." in card and "<script>alert" not in html and "&lt;script&gt;alert(2)" in card
    assert "#2–#8" in card and "2.5 s" in card and "tool_calls" in card
    assert 'data-last="8"' in card  # the newest event the card holds (app.js pages on from it)


def test_a_call_at_a_page_edge_shows_what_its_page_holds_and_links_on(thread, actor):
    event_append(thread=thread, actor=actor, events=weather_turn())
    newest = timeline.timeline_page(thread=thread, filters={}, size=4)  # #6..#9
    kinds = [(i.kind, i.key) for i in newest.items]
    # the result and reply of a call that started on the older page stay rows; its end links back
    assert kinds == [("event", 6), ("event", 7), ("call-end", 8), ("event", 9)]
    older = timeline.timeline_page(thread=thread, filters={}, before=newest.older, size=4)  # #2..#5
    card = next(i for i in older.items if i.kind == "call")
    assert (card.key, card.continues, card.last) == (2, 8, 5)
    assert [(o.kind, o.key, o.result_later) for o in card.outputs] == [
        ("event", 3, True), ("tool", 4, True), ("tool", 5, True)]


def test_a_call_without_call_ids_claims_the_outputs_of_its_turn(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "m"}},
        {"type": "LLMOutput", "role": "assistant", "content": "first"},
        {"type": "LLMComplete", "data": {}},
        {"type": "Message", "role": "user", "content": "next"},  # ends the turn
        {"type": "Message", "role": "assistant", "content": "said outside any call"},
    ])
    page = timeline.timeline_page(thread=thread, filters={})
    assert [(i.kind, i.key) for i in page.items] == [("call", 1), ("event", 4), ("event", 5)]
    assert [o.key for o in page.items[0].outputs] == [2]


# ------------------------------------------------------------------ a run's waterfall

def test_the_waterfall_shows_durations_gaps_and_dash_for_unknown_latency(editor_client, outsider_client,
                                                                        thread, actor):
    run = {"run_id": "r1"}
    event_append(thread=thread, actor=actor, events=[
        *weather_turn()[:-1],  # call 0–2.5 s; get_weather 1–1.4 s; get_time never answered
        # two events logged together, no latency reported: unknown, not 0 ms
        {"type": "LLMCallStart", "call_id": "c2", "occurred_at": at(5), **run},
        {"type": "LLMComplete", "call_id": "c2", "occurred_at": at(5), **run},
        # only the end, with the latency the agent reported
        {"type": "LLMComplete", "call_id": "c3", "occurred_at": at(7), "data": {"latency_ms": 300}, **run},
    ])
    bars = run_waterfall(run=Run.objects.get(run_id="r1")).bars
    assert [(b.kind, b.duration_ms, b.gap_ms) for b in bars] == [
        ("call", 2500, None), ("tool", 400, 0), ("tool", None, 0), ("call", None, None), ("call", 300, None)]
    # a gap is known after a bar that ended: 9 s - 7 s after the last call
    event_append(thread=thread, actor=actor, events=[
        {"type": "ToolCall", "content": "", "occurred_at": at(9), **run,
         "data": {"name": "search", "id": "t9"}},
        {"type": "ToolResult", "content": "ok", "occurred_at": at(9.25), **run,
         "data": {"tool_call_id": "t9"}}])
    assert run_waterfall(run=Run.objects.get(run_id="r1")).bars[-1].gap_ms == 2000

    page = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    url = f"/threads/{thread.pk}/runs/r1/spans/"
    assert f'data-waterfall href="{url}"' in page  # from the run header
    html = editor_client.get(url).content.decode()
    durations = re.findall(r"data-duration>([^<]*)</td>", html)
    assert durations == ["2.5 s", "400 ms", "—", "—", "300 ms", "250 ms"]
    gaps = re.findall(r"data-gap>([^<]*)</td>", html)
    assert gaps == ["—", "none", "none", "—", "—", "2.0 s"]  # never a made-up "0 ms"
    assert "get_weather" in html and 'class="axis"' in html
    assert outsider_client.get(url).status_code == 404
    assert editor_client.get(f"/threads/{thread.pk}/runs/nope/spans/").status_code == 404


def test_a_long_request_opens_at_its_newest_messages_with_a_jump_to_the_start(editor_client, thread, actor):
    sent = [{"role": "user" if i % 2 else "assistant", "content": f"message number {i + 1}"}
            for i in range(1222)]
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "gpt-4o", "messages": sent}},
        {"type": "LLMComplete", "data": {"model": "gpt-4o"}}])
    url = f"/threads/{thread.pk}/calls/1/sent/"
    html = editor_client.get(url, **HTMX).content.decode()
    shown = [int(n) for n in re.findall(r'data-message="(\d+)"', html)]
    assert shown == list(range(1122, 1222))  # the newest 100, the last one included
    assert "message number 1222<" in html and "message number 1122<" not in html
    assert "Messages 1123–1222 of 1222 (the newest)" in html
    assert f'data-sent-start href="{url}?from=0"' in html
    assert f'data-sent-earlier href="{url}?from=1022"' in html
    assert "data-sent-later" not in html
    start = editor_client.get(f"{url}?from=0", **HTMX).content.decode()
    assert re.findall(r'data-message="(\d+)"', start)[:1] == ["0"] and "Messages 1–100 of 1222" in start
    assert f'data-sent-later href="{url}?from=100"' in start and f'data-sent-newest href="{url}"' in start
    assert "data-sent-start" not in start
    # past the end: the newest page; not a number: a 400
    assert "Messages 1123–1222" in editor_client.get(f"{url}?from=5000", **HTMX).content.decode()
    assert editor_client.get(f"{url}?from=x").status_code == 400
