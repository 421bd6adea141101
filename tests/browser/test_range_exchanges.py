"""Collapse from the dashboard a range that would split a tool call from its results: the
confirm step names the exchange and offers the whole of it; confirming collapses that."""

import pytest
from playwright.sync_api import expect

from contextstore.models import Collapse
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import screenshot
from tests.services.test_render_asides import ASIDES, two_cities

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="cities-1", title="Two cities", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=two_cities(ASIDES[0]))
    return thread


def test_a_collapse_splitting_a_tool_exchange_is_confirmed_whole(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    page.click("#e1 .pick")
    page.click("#e4 .pick", modifiers=["Shift"])
    expect(page.locator("[data-range-label]")).to_have_text("#1 – #4")
    page.click("#selection summary:has-text('Collapse')")
    page.fill("#collapse-summary", "Asked for the weather; looked both cities up.")
    page.click("button:text-is('Collapse range')")

    split = page.locator("#selection [data-range-split]")
    expect(split).to_contain_text("Not collapsed as selected: #1–#4 would split a tool call")
    expect(split).to_contain_text("calls p, r at #2, #3, results at #4, #6")
    expect(split.locator("[data-widened]")).to_have_text("#1–#6")
    assert not Collapse.objects.exists()
    expect(page.locator("#timeline .event")).to_have_count(7)
    screenshot(page, "collapse-splits-tool-exchange")

    split.locator("button:has-text('Collapse #1–#6')").click()

    card = page.locator(".card-summary")
    expect(card).to_contain_text("#1–#6 · 6 events")
    expect(card).to_contain_text("Asked for the weather; looked both cities up.")
    expect(page.locator("#undo-bar")).to_contain_text("Collapsed 6 events (positions 1–6)")
    collapse = Collapse.objects.get()
    assert (collapse.start_position, collapse.end_position) == (1, 6)
    assert page.problems == []
