"""The Trends page in a real browser: group-by and range switched by link, every chart an SVG
with two axes and a legend, names shown as text; then a call diff's word-level change. axe finds
nothing at 1440x900 or 390x844."""

import pytest
from playwright.sync_api import expect

from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import axe_violations, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="trends-1", agent=f"helpdesk {XSS}", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    asked = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Where is order 4711?"}]
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "call_id": "m1", "data": {"model": "gpt-4o", "messages": asked}},
        {"type": "LLMComplete", "call_id": "m1",
         "data": {"model": "gpt-4o", "cost": 0.02, "input_tokens": 900, "output_tokens": 40}},
        {"type": "Error", "content": "gateway timed out"},
        {"type": "LLMCallStart", "call_id": "m2", "data": {"model": f"mini {XSS}", "messages": [
            asked[0], {"role": "user", "content": "Where is order 4712?"}]}},
        {"type": "LLMComplete", "call_id": "m2", "data": {
            "model": f"mini {XSS}", "cost": 0.01, "prompt_tokens": 800,
            "prompt_tokens_details": {"cached_tokens": 400}}},
    ])
    return thread


def test_trends_switches_grouping_and_range_and_a_call_diff_shows_word_changes(page, thread):
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto("/")
        page.get_by_role("navigation", name="Workspace pages").get_by_role("link", name="Trends").click()
        expect(page.locator("h1")).to_contain_text("Trends")
        charts = page.locator("figure.chart")
        expect(charts).to_have_count(6)
        for chart in ("cost", "tokens", "errors", "hit-rate", "p50", "p95"):
            svg = page.locator(f"#chart-{chart} svg")
            expect(svg.locator("[data-axis=x] text.tick").first).to_be_attached()
            expect(svg.locator("[data-axis=y] text.tick").first).to_be_attached()
        # the error names no model
        expect(page.locator("#chart-cost .legend li")).to_have_text(["gpt-4o", f"mini {XSS}", "(none)"])
        page.get_by_role("link", name="Day × agent").click()
        expect(page.locator("#chart-cost .legend li")).to_have_text([f"helpdesk {XSS}"])
        page.get_by_role("link", name="Last 7 days").click()
        assert "days=7" in page.url and "group=agent" in page.url
        expect(page.locator("#chart-errors tbody tr")).to_have_count(7)
        expect(page.locator("#chart-errors svg circle")).to_have_count(7)
        page.locator("#chart-errors summary").click()
        expect(page.locator("#chart-errors tbody tr").last).to_contain_text("1")
        screenshot(page, f"trends-{width}")
        assert axe_violations(page) == []

        page.goto(f"/threads/{thread.pk}/calls/4/diff/")
        changed = page.locator(".changed-segment .word-diff").first
        expect(changed.locator("del")).to_have_text("4711")
        expect(changed.locator("ins")).to_have_text("4712")
        screenshot(page, f"trends-call-diff-{width}")
        assert axe_violations(page) == []
    assert page.problems == []
