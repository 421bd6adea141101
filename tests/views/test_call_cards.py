"""LLM calls as cards: one card per LLMCallStart…LLMComplete, "as sent", diff with the previous."""

import re

from contextstore.selectors import rendering
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
    assert cards(html) == ["4"]  # the card stands at its LLMComplete; the start is folded in
    assert seqs(html) == [1, 4]  # BeforeAgentCall stays behind "runtime events"
    card = html[html.index('id="e4"'):]
    card = card[:card.index("</article>")]
    for text in ("#3–#4", "gpt-4o", "1.2k", "80", "2.5 s", "$0.01", "stop", "As sent",
                 "Diff with previous call", f"/threads/{thread.pk}/calls/3/sent/"):
        assert text in card, text


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
    # the start is on an older page
    assert "#1–#64" in newest[:newest.index("</article>")] and "1 min 0 s" in newest
    older = editor_client.get(f"/threads/{thread.pk}/", {"before": 15}, **HTMX).content.decode()
    assert cards(older) == ["1", "3"]  # a's start (ended later), b's pair at its end
    assert "#2–#3" in older and "m-b" in older and "#1–#64" in older


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
