import random
import re

import pytest

from contextstore.demo_turns import turn_events
from contextstore.models import Event
from contextstore.services.blocks import block_upsert
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.memories import memory_remember, provider_state_put
from contextstore.services.renders import context_render_recorded
from contextstore.services.runs import run_start
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.state import state_write
from contextstore.services.threads import thread_clear_context
from tests.conftest import messages, response_json
from tests.views.conftest import HTMX

XSS = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def seqs(html: str) -> list[int]:
    return [int(s) for s in re.findall(r'data-seq="(\d+)"', html)]


def test_the_thread_page_shows_the_newest_page_of_events_at_the_bottom(editor_client, thread, actor):
    event_append(thread=thread, events=messages(120), actor=actor)
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert seqs(html) == list(range(71, 121))
    assert f'hx-get="/threads/{thread.pk}/?before=71"' in html
    assert 'id="tail"' in html and "after=120" in html


def test_scrolling_up_loads_the_older_page_as_a_fragment(editor_client, thread, actor):
    event_append(thread=thread, events=messages(120), actor=actor)
    html = editor_client.get(f"/threads/{thread.pk}/", {"before": 71}, **HTMX).content.decode()
    assert "<html" not in html
    assert seqs(html) == list(range(21, 71))
    last = editor_client.get(f"/threads/{thread.pk}/", {"before": 21}, **HTMX).content.decode()
    assert seqs(last) == list(range(1, 21))
    assert "before=" not in last


def test_the_paging_links_keep_the_filters_and_name_their_cursor_once(editor_client, thread, actor):
    event_append(thread=thread, events=messages(120), actor=actor)
    url = f"/threads/{thread.pk}/"
    html = editor_client.get(url, {"q": "turn", "before": 71, "budget": 900}, **HTMX).content.decode()
    assert seqs(html) == list(range(21, 71))
    assert f'hx-get="{url}?q=turn&amp;before=21"' in html  # the filter kept; budget and before dropped
    assert 'href="?q=turn&amp;before=21"' in html
    page = editor_client.get(url, {"q": "turn", "around": 30}).content.decode()
    assert f'data-base="{url}?q=turn&amp;"' in page
    assert 'href="?q=turn"' in page  # "Jump to the newest events": the filter without the cursor


def test_the_live_tail_returns_only_events_appended_since(editor_client, thread, actor):
    event_append(thread=thread, events=messages(5), actor=actor)
    empty = editor_client.get(f"/threads/{thread.pk}/", {"after": 5}, **HTMX).content.decode()
    assert seqs(empty) == [] and "after=5" in empty
    event_append(thread=thread, events=messages(2, start=5), actor=actor)
    html = editor_client.get(f"/threads/{thread.pk}/", {"after": 5}, **HTMX).content.decode()
    assert seqs(html) == [6, 7] and "after=7" in html


def test_runtime_events_are_hidden_until_asked_for_and_types_filter(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "content": "hello"},
        {"type": "BeforeAgentCall", "content": "calling"},
        {"type": "Error", "content": "it broke"},
    ])
    url = f"/threads/{thread.pk}/"
    assert seqs(editor_client.get(url).content.decode()) == [1, 3]
    assert seqs(editor_client.get(url, {"runtime": "on"}).content.decode()) == [1, 2, 3]
    errors = editor_client.get(url, {"type": "Error"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="timeline")
    assert seqs(errors.content.decode()) == [3]
    assert 'id="timeline"' in errors.content.decode() and "<html" not in errors.content.decode()


def test_text_run_and_call_filters(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "content": "about invoices", "run_id": "r1"},
        {"type": "ToolCall", "content": "lookup", "call_id": "c9", "data": {"tool": "search"}},
        {"type": "Message", "content": "about refunds", "run_id": "r2"},
    ])
    url = f"/threads/{thread.pk}/"
    assert seqs(editor_client.get(url, {"q": "REFUND"}).content.decode()) == [3]
    assert seqs(editor_client.get(url, {"run": "r1"}).content.decode()) == [1]
    assert seqs(editor_client.get(url, {"call": "c9"}).content.decode()) == [2]


def test_events_show_type_role_tokens_run_folded_content_thinking_and_json(editor_client, thread, actor):
    run_start(thread=thread, run_id="run-7", actor=actor)
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMOutput", "role": "assistant", "content": "x" * 2000, "run_id": "run-7",
         "parts": [{"type": "thinking", "thinking": "let me think"}, {"type": "tool_use", "name": "calc"}],
         "data": {"answer": 42}},
        {"type": "Error", "content": "boom"},
    ])
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert "LLMOutput" in html and "assistant" in html and "run run-7" in html
    assert 'class="content clamp"' in html and "show more" in html
    assert "<summary>thinking</summary>" in html and "let me think" in html
    # data and parts as foldable JSON trees: a key copies its path, a value itself
    assert 'data-copy-path="$.answer"' in html and 'title="Copy value">42</button>' in html
    assert 'data-copy-path="$[0].name"' in html and "&quot;calc&quot;</button>" in html
    assert "is-error" in html


def test_agent_content_is_escaped_everywhere_on_the_thread_page(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "content": XSS, "data": {XSS: XSS}, "parts": [{"type": "text", "text": XSS}]},
    ])
    # a block name holds no "/" (one URL path segment): the hostile name without its end tag
    block_upsert(thread=thread, name=XSS.replace("</", "<"), value=XSS, actor=actor)
    state_write(thread=thread, state={XSS: [XSS]}, actor=actor, reason=XSS)
    collapse_create(thread=thread, start_position=1, end_position=1, summary_text=XSS, actor=actor,
                    provenance={"note": XSS})
    provider_state_put(thread=thread, provider=XSS, state={"k": XSS}, actor=actor)
    memory_remember(workspace=thread.workspace, user_id=thread.session.user_id, content=XSS, actor=actor)
    for url in (f"/threads/{thread.pk}/", f"/threads/{thread.pk}/collapses/{thread.collapses.get().pk}/",
                f"/threads/{thread.pk}/context/", f"/threads/{thread.pk}/state/diff/?a=1&b=1"):
        html = editor_client.get(url).content.decode()
        assert "<img src=x" not in html and "<script>alert" not in html, url
    page = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_a_collapsed_range_shows_as_one_summary_card_with_its_originals(editor_client, thread, actor):
    event_append(thread=thread, events=messages(10), actor=actor)
    collapse = collapse_create(thread=thread, start_position=3, end_position=6, summary_text="turns 3 to 6",
                               actor=actor, provenance={"model": "extractive"})
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert seqs(html) == [1, 2, 7, 8, 9, 10]
    assert html.index('data-seq="2"') < html.index(f'id="c{collapse.pk}"') < html.index('data-seq="7"')
    assert "#3–#6 · 4 events" in html and "turns 3 to 6" in html and "Undo collapse" in html
    assert "extractive" in html
    members = editor_client.get(f"/threads/{thread.pk}/collapses/{collapse.pk}/", **HTMX).content.decode()
    assert seqs(members) == [3, 4, 5, 6] and "<html" not in members
    assert editor_client.get(f"/threads/{thread.pk}/collapses/{collapse.pk}/").status_code == 200


def test_cleared_events_are_greyed_behind_a_toggle(editor_client, thread, actor):
    event_append(thread=thread, events=messages(3), actor=actor)
    thread_clear_context(thread=thread, actor=actor)
    event_append(thread=thread, events=messages(1, start=3), actor=actor)
    url = f"/threads/{thread.pk}/"
    assert seqs(editor_client.get(url).content.decode()) == [4]
    html = editor_client.get(url, {"cleared": "on"}).content.decode()
    assert seqs(html) == [1, 2, 3, 4]
    assert html.count("is-cleared") == 3


def test_the_side_panel_shows_blocks_gauge_state_revisions_providers_memories_and_runs(
    editor_client, thread, actor
):
    event_append(thread=thread, events=messages(3), actor=actor)
    block_upsert(thread=thread, name="persona", value="You are terse.", placement="prefix", actor=actor)
    block_upsert(thread=thread, name="muted", value=None, actor=actor)
    state_write(thread=thread, state={"plan": ["a", "b"]}, actor=actor)
    provider_state_put(thread=thread, provider="mem0", state={"seen": 3}, actor=actor)
    memory_remember(workspace=thread.workspace, user_id="alice", content="likes tea", actor=actor)
    run_start(thread=thread, run_id="r-1", actor=actor)
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMComplete", "run_id": "r-1",
         "data": {"input_tokens": 100, "output_tokens": 50, "cost": 0.02}}])
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert "persona" in html and "suppressed" in html
    assert 'class="g-prefix"' in html and 'class="g-history"' in html
    assert "plan" in html and "r1" in html
    assert "mem0" in html and "likes tea" in html
    assert 'class="c-tokens"' in html and "r-1: 150 input + output tokens" in html


@pytest.mark.slow
def test_the_thread_page_queries_do_not_grow_with_history(
    editor_client, workspace, actor, django_assert_max_num_queries
):
    counts = []
    for key, n in (("small", 100), ("large", 3000)):
        session = session_ensure(workspace=workspace, key=key, actor=actor)[0]
        thread = thread_ensure(session=session, actor=actor)[0]
        for start in range(0, n, 1000):
            batch = messages(min(1000, n - start), start=start, words=6)
            event_append(thread=thread, events=batch, actor=actor)
        collapse_create(thread=thread, start_position=2, end_position=n // 2,
                        summary_text="early", actor=actor)
        state_write(thread=thread, state={"n": n}, actor=actor)
        # the newest page holds call cards with their outputs, one cut by the page's edge
        rng = random.Random(7)
        event_append(thread=thread, actor=actor,
                     events=[e for i in range(12) for e in turn_events(rng, i, f"run-{i // 4}", f"c{i}")])
        editor_client.get(f"/threads/{thread.pk}/")  # warm the session row
        # 22: the page's comment counts are one grouped query; the gauge reads the tools of the
        # newest logged call (counted in the request, tokens.request_tokens); one for the header's
        # firing-alerts banner
        with django_assert_max_num_queries(23) as ctx:
            response = editor_client.get(f"/threads/{thread.pk}/")
        assert response.status_code == 200
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]
    assert 'class="call-card' in response.content.decode()


def test_what_the_model_sees_compares_with_the_latest_recorded_call(editor_client, thread, actor):
    event_append(thread=thread, events=messages(3), actor=actor)
    block_upsert(thread=thread, name="rules", value="Be brief.", placement="prefix", actor=actor)
    url = f"/threads/{thread.pk}/context/"
    first = editor_client.get(url, {"budget": 5000}).content.decode()
    assert 'data-prefix="none"' in first and "Be brief." in first and "turn 2" in first
    _, record = context_render_recorded(thread=thread, max_tokens=5000, actor=actor, fmt="openai")
    event_append(thread=thread, actor=actor,
                 events=[{"type": "LLMCallStart", "data": {"model": "gpt-4o", "render_id": str(record.pk)}}])
    same = editor_client.get(url, **HTMX).content.decode()
    assert 'data-cause="append"' in same and "<html" not in same
    block_upsert(thread=thread, name="rules", value="Be thorough.", placement="prefix", actor=actor)
    changed = editor_client.get(url, **HTMX).content.decode()
    assert 'data-cause="block_edit"' in changed and "block “rules” edited v1→v2" in changed


def test_a_small_budget_leaves_older_events_out_of_what_the_model_sees(editor_client, thread, actor):
    event_append(thread=thread, events=messages(20), actor=actor)
    html = editor_client.get(f"/threads/{thread.pk}/context/", {"budget": 200}).content.decode()
    assert "turn 19" in html and "turn 0:" not in html and "left out" in html


def test_what_the_model_sees_says_why_each_event_was_left_out(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=messages(3, words=10) + [
        {"type": "ToolResult", "content": "<b>orphan</b>", "data": {"tool_call_id": "gone"}},
        {"type": "Message", "content": "huge " * 3000},
        {"type": "Message", "content": "look it up"},  # a turn of its own: the huge one is skipped
        {"type": "ToolCall", "data": {"id": "c1", "name": "lookup", "arguments": {"q": "<i>"}}},
        {"type": "ToolResult", "content": "found", "data": {"tool_call_id": "c1"}}])
    html = editor_client.get(f"/threads/{thread.pk}/context/", {"budget": 500}).content.decode()
    assert 'data-skipped="5" data-reason="oversize"' in html
    assert 'data-skipped="4" data-reason="orphan_tool_result"' in html
    assert "larger than the budget left" in html and "history cut to fit" in html
    assert "lookup(" in html and "&lt;i&gt;" in html and "<i>" not in html
    # the render's start stays past the huge turn (stable starts): older turns do not come back
    assert "turn 0:" not in html and 'data-reason="window_start"' in html
    assert "moves forward in chunks" in html


def test_the_side_panel_uses_the_thread_model_budget(editor_client, thread, actor):
    from contextstore.services.model_settings import model_settings_update

    model_settings_update(target=thread, model="gpt-4", reserve_output=192, actor=actor)
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert "/ 8k tokens" in html and "<code>gpt-4</code>" in html and "(table)" in html


def test_export_downloads_the_thread_or_a_selected_range_as_json(editor_client, thread, actor):
    event_append(thread=thread, events=messages(6), actor=actor)
    whole = editor_client.get(f"/threads/{thread.pk}/export/")
    assert whole["Content-Disposition"].startswith("attachment")
    assert whole["X-Event-Count"] == "6" and len(response_json(whole)["events"]) == 6
    part = editor_client.get(f"/threads/{thread.pk}/export/", {"start_position": 4, "end_position": 2}).json()
    assert [e["seq"] for e in part["events"]] == [2, 3, 4]


@pytest.mark.parametrize("path", ["", "context/", "export/", "state/diff/?a=1&b=1", "collapses/1/"])
def test_another_workspaces_thread_is_a_404_everywhere(outsider_client, thread, path):
    assert outsider_client.get(f"/threads/{thread.pk}/{path}").status_code == 404


def test_a_missing_thread_is_a_readable_404(editor_client, thread):
    response = editor_client.get("/threads/999999/")
    assert response.status_code == 404


def test_runtime_and_collapsed_state_counts_stay_consistent_with_the_rows(thread, actor):
    # A guard for the page's assumption: collapsed originals never show in the timeline query.
    event_append(thread=thread, events=messages(4), actor=actor)
    collapse_create(thread=thread, start_position=1, end_position=2, summary_text="s", actor=actor)
    assert Event.objects.filter(thread=thread, status="collapsed").count() == 2


def test_an_older_page_at_its_own_url_has_no_live_tail_and_links_back_to_the_newest(
    editor_client, thread, actor
):
    event_append(thread=thread, events=messages(120), actor=actor)
    html = editor_client.get(f"/threads/{thread.pk}/", {"before": 60}).content.decode()
    assert seqs(html) == list(range(10, 60))
    assert 'id="tail"' not in html and "Jump to the newest events" in html


def test_an_undone_collapse_says_so_on_its_own_page(editor_client, thread, actor):
    from contextstore.services.collapses import collapse_undo

    event_append(thread=thread, events=messages(4), actor=actor)
    collapse = collapse_create(thread=thread, start_position=1, end_position=2, summary_text="s", actor=actor)
    collapse_undo(collapse=collapse, actor=actor)
    html = editor_client.get(f"/threads/{thread.pk}/collapses/{collapse.pk}/").content.decode()
    assert "was undone just now" in html and "No originals" in html


def test_an_event_type_of_a_framework_s_own_shows_as_a_generic_escaped_entry(editor_client, thread,
                                                                              actor):
    odd = 'langgraph:checkpoint"><script>alert(1)</script>'
    event_append(thread=thread, events=[{"type": odd, "content": "saved"},
                                        {"type": "Message", "content": "hi"}], actor=actor)
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert "<script>alert(1)" not in html
    assert "langgraph:checkpoint&quot;&gt;&lt;script&gt;" in html
    assert 'class="event t-generic' in html and 'class="event t-message' in html
