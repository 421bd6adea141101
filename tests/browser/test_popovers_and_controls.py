"""A call card's popovers ("Add to dataset…", "Share…") close on Escape, giving focus back to
their toggle, and on a click outside; a right-to-left override in a tool's output shows as a
marker, so a file name reads as it is stored."""

import pytest
from playwright.sync_api import expect

from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="pop", title="Popovers", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "Which file?"},
        {"type": "LLMCallStart",
         "data": {"model": "m", "messages": [{"role": "user", "content": "Which file?"}]}},
        {"type": "LLMComplete", "role": "assistant", "content": "this one", "data": {"model": "m"}},
        {"type": "ToolResult", "role": "tool", "content": "saved invoice_\u202egpj.exe"},
    ])
    return thread


@pytest.mark.parametrize("name", ["Add to dataset…", "Share…"])
def test_a_call_cards_popover_closes_on_escape_and_on_a_click_outside(page, thread, name):
    page.goto(f"/threads/{thread.pk}/")
    card = page.locator("[data-call='2']")
    toggle = card.locator(f"summary:text-is('{name}')")
    popover = toggle.locator("xpath=..")
    toggle.click()
    expect(popover).to_have_attribute("open", "")
    popover.locator("input, select").first.focus()
    page.keyboard.press("Escape")
    expect(popover).not_to_have_attribute("open", "")
    assert page.evaluate("document.activeElement.textContent") == name
    toggle.click()
    expect(popover).to_have_attribute("open", "")
    page.locator("h1").click()
    expect(popover).not_to_have_attribute("open", "")
    assert page.problems == []


def test_a_right_to_left_override_is_shown_as_a_marker(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    output = page.locator("[data-seq='4'] .content").first
    expect(output).to_contain_text("invoice_RLOgpj.exe")
    assert "\u202e" not in output.inner_text()
    assert output.locator(".nul").get_attribute("title") == "RIGHT-TO-LEFT OVERRIDE (U+202E)"
