"""The prompt-cache verdict as the dashboard shows it: the call diff, what the model sees, the
session's cache panel and the workspace's page; the three contradictions of issue 31 as pages."""

from contextstore.services.blocks import block_upsert
from contextstore.services.events import event_append
from contextstore.services.threads import thread_clear_context
from tests.conftest import messages
from tests.services.test_cache_verdicts import own_call, recorded_call
from tests.views.conftest import HTMX

XSS = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def verdicts(html: str) -> list[str]:
    """Every cache verdict a page states, in words."""
    words = ("prompt cache kept", "prompt cache partly kept", "prompt cache lost", "too short to cache",
             "prompt cache still applies", "(prompt cache kept)", "(prompt cache lost)")
    return [w for w in words if w in html]


def test_the_call_diff_never_says_kept_beside_lost_when_an_anthropic_suffix_block_changed(
        editor_client, thread, actor):
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    block_upsert(thread=thread, name="clock", value="Now: 2026-01-05 10:00 UTC", placement="suffix",
                 actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40))
    recorded_call(thread, actor)
    block_upsert(thread=thread, name="clock", value="Now: 2026-01-05 10:05 UTC", actor=actor)
    second = recorded_call(thread, actor, cache_read_input_tokens=0, cache_creation_input_tokens=2600)
    html = editor_client.get(f"/threads/{thread.pk}/calls/{second}/diff/").content.decode()
    assert verdicts(html) == ["prompt cache lost"] and "prefix hash" not in html
    assert 'data-cause="timestamp"' in html and "First difference: <b>system block 2 (suffix blocks)" in html
    assert "Under Anthropic's minimum cacheable prefix of 1,024 tokens" in html
    assert 'cache-reported" data-read="0" data-creation="2600"' in html
    assert 'cache-disagreement"' not in html  # lost, and the provider read nothing: they agree


def test_the_call_diff_says_lost_when_one_short_message_of_a_long_request_is_shared(editor_client, thread,
                                                                                  actor):
    system = {"role": "system", "content": "You are a helpful agent."}
    first = own_call(thread, actor, [system, *({"role": "user", "content": f"old {i} " + "x " * 80}
                                               for i in range(30))])
    second = own_call(thread, actor, [system, *({"role": "user", "content": f"new {i} " + "x " * 80}
                                                for i in range(30))],
                      prompt_tokens=5000, prompt_tokens_details={"cached_tokens": 4096})
    html = editor_client.get(f"/threads/{thread.pk}/calls/{second}/diff/", **HTMX).content.decode()
    assert verdicts(html) == ["prompt cache lost"] and first < second
    reuse = html[html.index('class="cache-reuse"'):]
    reusable, total = (int(reuse.split(f'data-{k}="')[1].split('"')[0]) for k in ("reusable", "total"))
    assert reusable < 100 < 2000 < total and f"{reusable:,} of {total:,} input tokens reusable" in html
    # the provider read 4,096 tokens: an earlier request was cached, not this pair's; flagged
    assert 'cache-disagreement"' in html and "earlier request" in html


def test_what_the_model_sees_says_lost_after_the_whole_history_was_cleared(editor_client, thread, actor):
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40))
    recorded_call(thread, actor, fmt="openai", model="gpt-4o")
    url = f"/threads/{thread.pk}/context/"
    assert 'data-prefix="kept"' in editor_client.get(url).content.decode()
    thread_clear_context(thread=thread, actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40, start=100))
    html = editor_client.get(url).content.decode()
    assert verdicts(html) == ["prompt cache lost"] and 'data-prefix="lost"' in html
    assert 'data-cause="clear"' in html and "the context was cleared: 40 events" in html


def test_a_word_diff_of_agent_text_is_escaped(editor_client, thread, actor):
    own_call(thread, actor, [{"role": "system", "content": "be brief"}])
    second = own_call(thread, actor, [{"role": "system", "content": f"be {XSS}"}])
    html = editor_client.get(f"/threads/{thread.pk}/calls/{second}/diff/").content.decode()
    assert "<script>alert" not in html and "&lt;script&gt;alert(2)" in html and '<ins class="d-add">' in html


def test_the_session_panel_and_the_workspace_page_show_hit_rate_lost_cost_and_causes(
        editor_client, thread, session, actor):
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40))
    recorded_call(thread, actor, cache_read_input_tokens=0, cache_creation_input_tokens=2500)
    event_append(thread=thread, actor=actor, events=messages(2, start=40))
    recorded_call(thread, actor, cache_read_input_tokens=2500, cache_creation_input_tokens=100)
    block_upsert(thread=thread, name="persona", value="Be thorough.", actor=actor)
    broken = recorded_call(thread, actor, cache_read_input_tokens=0, cache_creation_input_tokens=2700)
    page = editor_client.get(f"/sessions/{session.pk}/").content.decode()
    assert f'hx-get="/sessions/{session.pk}/cache/"' in page  # the panel loads after the page
    panel = editor_client.get(f"/sessions/{session.pk}/cache/", **HTMX).content.decode()
    assert "<html" not in panel and 'id="cache-panel"' in panel
    assert 'data-hit-rate="32"' in panel and "2,500" in panel  # 2,500 read of 7,830 input tokens
    assert '<tr data-cause="block_edit"><td>block edited</td><td class="num">1</td>' in panel
    assert f"/threads/{thread.pk}/calls/{broken}/diff/" in panel and "v1→v2" in panel
    whole = editor_client.get("/cache/").content.decode()
    assert 'id="cache-sessions"' in whole and f"/sessions/{session.pk}/cache/" in whole
    assert 'data-hit-rate="32"' in whole


def test_cache_pages_hide_other_workspaces(outsider_client, editor_client, session, thread, actor):
    recorded_call(thread, actor)
    assert editor_client.get(f"/sessions/{session.pk}/cache/").status_code == 200
    assert outsider_client.get(f"/sessions/{session.pk}/cache/").status_code == 404
    assert f"/sessions/{session.pk}/" not in outsider_client.get("/cache/").content.decode()


def test_a_session_not_compared_yet_says_so_and_not_that_it_lost_nothing(editor_client, thread, actor,
                                                                         monkeypatch):
    from contextstore.selectors import cache

    event_append(thread=thread, actor=actor, events=messages(4))
    recorded_call(thread, actor, cache_read_input_tokens=0, cache_creation_input_tokens=2500)
    event_append(thread=thread, actor=actor, events=messages(2, start=4))
    recorded_call(thread, actor, cache_read_input_tokens=0, cache_creation_input_tokens=2600)
    monkeypatch.setattr(cache, "REBUILDS_PER_VIEW", 0)  # this view compares nothing
    whole = editor_client.get("/cache/").content.decode()
    row = whole[whole.index('id="cache-sessions"'):]
    assert 'data-not-compared>not compared yet</td>' in row and "$0" not in row


def test_after_the_background_job_every_pair_is_compared_and_none_waits_for_a_view(
        editor_client, session, thread, actor, monkeypatch):
    from contextstore import tasks
    from contextstore.selectors import cache
    from tests.services.test_cache_verdicts_background import three_calls

    three_calls(thread, actor)
    monkeypatch.setattr(cache, "REBUILDS_PER_VIEW", 0)  # the views compare nothing themselves
    before = editor_client.get(f"/sessions/{session.pk}/cache/", **HTMX).content.decode()
    assert 'data-pending="2"' in before and "0 compared with the call before" in before
    breaks = editor_client.get(f"/sessions/{session.pk}/cache/breaks/").content.decode()
    assert 'data-pending="3"' in breaks and "not compared yet" in breaks and 'id="cache-breaks"' not in breaks
    tasks.compare_cache_pending()
    after = editor_client.get(f"/sessions/{session.pk}/cache/", **HTMX).content.decode()
    assert "not compared yet" not in after and "2 compared with the call before" in after
    assert '<tr data-cause="block_edit"><td>block edited</td><td class="num">1</td>' in after
    assert f'href="/sessions/{session.pk}/cache/breaks/"' in after
    whole = editor_client.get("/cache/").content.decode()
    assert "not compared yet" not in whole
    breaks = editor_client.get(f"/sessions/{session.pk}/cache/breaks/").content.decode()
    assert "not compared yet" not in breaks and breaks.count("<tr data-cause=") == 1
    row = breaks[breaks.index('<tr data-cause="block_edit"'):]
    assert "system block 1" in row and "v1→v2" in row and f"/threads/{thread.pk}/calls/" in row


def test_the_cache_breaks_page_pages_and_hides_other_workspaces(editor_client, outsider_client, session,
                                                                 thread, actor, monkeypatch):
    from contextstore import tasks
    from contextstore.selectors import cache
    from tests.services.test_cache_verdicts_background import three_calls

    three_calls(thread, actor)
    block_upsert(thread=thread, name="persona", value="Be brief again.", actor=actor)
    from tests.services.test_cache_verdicts import recorded_call
    last = recorded_call(thread, actor)
    tasks.compare_cache_pending()
    monkeypatch.setattr(cache, "BREAKS_PAGE", 1)
    url = f"/sessions/{session.pk}/cache/breaks/"
    first = editor_client.get(url).content.decode()
    assert first.count("<tr data-cause=") == 1 and 'rel="next" href="?page=2"' in first
    second = editor_client.get(url + "?page=2").content.decode()
    assert f'data-seq="{last}"' in second and 'rel="prev"' in second and 'rel="next"' not in second
    assert "No more cache breaks." in editor_client.get(url + "?page=3").content.decode()
    assert editor_client.get(url + "?page=x").status_code == 400
    assert outsider_client.get(url).status_code == 404


def test_the_cache_breaks_page_reads_as_many_rows_at_any_history(editor_client, session, thread, actor,
                                                                  monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from contextstore import tasks
    from contextstore.selectors import cache
    from tests.services.test_cache_verdicts import recorded_call
    from tests.services.test_cache_verdicts_background import three_calls

    three_calls(thread, actor)
    tasks.compare_cache_pending()
    monkeypatch.setattr(cache, "BREAKS_PAGE", 1)
    url = f"/sessions/{session.pk}/cache/breaks/"
    with CaptureQueriesContext(connection) as few:
        editor_client.get(url)
    for value in ("Be brief again.", "Be brief once more."):
        block_upsert(thread=thread, name="persona", value=value, actor=actor)
        recorded_call(thread, actor)
    tasks.compare_cache_pending()
    with CaptureQueriesContext(connection) as more:
        page = editor_client.get(url).content.decode()
    assert 'rel="next"' in page and len(more.captured_queries) == len(few.captured_queries)
