"""The prompt-cache analysis in a real browser: a call card's diff, what the model sees and the
session's cache panel, each stating one verdict that matches what happened; axe finds nothing."""

import pytest
from playwright.sync_api import expect

from contextstore.services.blocks import block_upsert
from contextstore.services.events import event_append
from contextstore.services.renders import context_render_recorded
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.threads import thread_clear_context
from tests.browser.conftest import axe_violations, screenshot
from tests.conftest import messages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

XSS = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def call(thread, actor, fmt: str, **usage) -> int:
    thread.refresh_from_db()
    _, record = context_render_recorded(thread=thread, max_tokens=50_000, actor=actor, fmt=fmt)
    model = "claude-sonnet-4" if fmt == "anthropic" else "gpt-4o"
    return event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": model, "render_id": str(record.pk)}},
        {"type": "LLMComplete", "data": {"model": model, "input_tokens": 10, **usage}},
    ]).events[0].seq


@pytest.fixture
def thread(workspace, actor):
    """An anthropic-format agent whose suffix block holds a clock: its second call loses the
    cache though the prefix blocks never changed (issue 31's first contradiction)."""
    session = session_ensure(workspace=workspace, key="cache-1", title="Clock in the prompt", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    block_upsert(thread=thread, name="persona", value="You are a careful support agent.", placement="prefix",
                 actor=actor)
    block_upsert(thread=thread, name="clock", value=f"Now: 2026-01-05 10:00 UTC {XSS}", placement="suffix",
                 actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40))
    call(thread, actor, "anthropic", cache_read_input_tokens=0, cache_creation_input_tokens=2600)
    event_append(thread=thread, actor=actor, events=messages(2, start=40))
    call(thread, actor, "anthropic", cache_read_input_tokens=2500, cache_creation_input_tokens=150)
    block_upsert(thread=thread, name="clock", value=f"Now: 2026-01-05 10:05 UTC {XSS}", actor=actor)
    call(thread, actor, "anthropic", cache_read_input_tokens=0, cache_creation_input_tokens=2800)
    return thread


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)])
def test_the_call_diff_model_view_and_session_panel_agree_on_what_the_cache_kept(page, thread, actor, size):
    page.set_viewport_size(dict(zip(("width", "height"), size, strict=True)))
    name = f"{size[0]}"
    page.goto(f"/threads/{thread.pk}/")
    cards = page.locator("#timeline .call-card")
    expect(cards).to_have_count(3)

    # the second call only appended: kept, and the provider agrees
    cards.nth(1).locator("[data-call-diff]").click()
    kept = cards.nth(1).locator(".cache-verdict")
    expect(kept).to_have_attribute("data-cache", "kept")
    expect(kept).to_contain_text("nothing earlier changed")
    expect(kept.locator(".cache-disagreement")).to_have_count(0)

    # the third: the clock in a suffix block (in `system`, before every message) changed
    cards.nth(2).locator("[data-call-diff]").click()
    lost = cards.nth(2).locator(".cache-verdict")
    expect(lost).to_have_attribute("data-cache", "lost")
    expect(lost).to_have_attribute("data-cause", "timestamp")
    expect(lost).to_contain_text("system block 2 (suffix blocks)")
    expect(lost).to_contain_text("Under Anthropic's minimum cacheable prefix of 1,024 tokens")
    expect(lost.locator(".word-diff del")).to_have_text("00")
    expect(lost.locator(".word-diff ins")).to_have_text("05")
    expect(lost).to_contain_text("UTC <img src=x onerror=")  # agent text shown as text
    expect(lost.locator(".cache-reported")).to_contain_text("0 tokens read from the cache")
    expect(cards.nth(2).locator(".call-diff")).not_to_contain_text("prompt cache kept")
    expect(cards.nth(2).locator(".call-diff")).not_to_contain_text("prefix hash")
    lost.scroll_into_view_if_needed()
    screenshot(page, f"cache-call-diff-{name}")
    assert axe_violations(page) == []

    # what the model sees: against the latest call, nothing changed since
    page.goto(f"/threads/{thread.pk}/context/")
    expect(page.locator("#prefix-status")).to_have_attribute("data-prefix", "kept")
    # the whole history cleared: the model view says lost, and why
    thread_clear_context(thread=thread, actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40, start=100))
    page.reload()
    status = page.locator("#prefix-status")
    expect(status).to_have_attribute("data-prefix", "lost")
    expect(status).to_contain_text("the context was cleared: 42 events")
    expect(page.locator("main")).not_to_contain_text("still applies")
    screenshot(page, f"cache-model-view-{name}")
    assert axe_violations(page) == []

    # the session's panel loads after its page: hit rate, cost lost, the top cause
    page.goto(f"/sessions/{thread.session_id}/")
    panel = page.locator("#cache-panel")
    expect(panel.locator("#cache-causes tr[data-cause=timestamp]")).to_be_visible()
    expect(panel.locator("#cache-hit-rate")).to_contain_text("2,500 of 8,080 input tokens")
    panel.scroll_into_view_if_needed()
    screenshot(page, f"cache-session-panel-{name}")
    assert axe_violations(page) == []
    panel.locator(f"a[href='/threads/{thread.pk}/calls/{cards_seq(thread)}/diff/']").click()
    expect(page.locator(".cache-verdict")).to_have_attribute("data-cause", "timestamp")
    page.goto("/cache/")
    expect(page.locator("#cache-sessions")).to_contain_text("Clock in the prompt")
    screenshot(page, f"cache-workspace-{name}")
    assert axe_violations(page) == []
    assert page.problems == [], page.problems


def cards_seq(thread) -> int:
    """The third call's start."""
    from contextstore.models import Event

    return Event.objects.filter(thread=thread, type="LLMCallStart").order_by("-seq").values_list(
        "seq", flat=True)[0]


def test_the_session_panel_links_to_every_cache_break_the_worker_compared(page, thread, actor):
    from contextstore import tasks

    tasks.compare_cache_pending()
    page.goto(f"/sessions/{thread.session_id}/")
    page.locator("#cache-panel #cache-breaks-link").click()
    expect(page).to_have_url(f"{page.url.split('/sessions/')[0]}/sessions/{thread.session_id}/cache/breaks/")
    rows = page.locator("#cache-breaks tbody tr")
    expect(rows).to_have_count(1)
    row = rows.first
    expect(row).to_have_attribute("data-cause", "timestamp")
    expect(row.locator("[data-label=where]")).to_have_text("system block 2 (suffix blocks)")
    assert int(row.locator("[data-label=lost]").get_attribute("data-tokens")) > 1000
    expect(page.locator("main")).not_to_contain_text("not compared yet")
    screenshot(page, "cache-breaks")
    assert axe_violations(page) == []
    row.locator("a").click()
    expect(page.locator(".cache-verdict")).to_have_attribute("data-cause", "timestamp")
    assert page.problems == [], page.problems
