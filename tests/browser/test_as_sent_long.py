"""A long request's "as sent" (1,222 messages) opens at its newest messages, where the model
read last, and "Jump to the start" reaches the first one in one click; axe finds nothing at
either size."""

import pytest
from playwright.sync_api import expect

from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import axe_violations
from tests.browser.test_accessibility import SIZES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="long", title="Long request", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    sent = [{"role": "user" if i % 2 else "assistant", "content": f"message number {i + 1}"}
            for i in range(1222)]
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "gpt-4o", "messages": sent}},
        {"type": "LLMComplete", "role": "assistant", "content": "done", "data": {"model": "gpt-4o"}}])
    return thread


@pytest.mark.parametrize("size", SIZES)
def test_a_long_request_opens_at_its_newest_messages(page, thread, size):
    page.set_viewport_size(dict(zip(("width", "height"), SIZES[size], strict=True)))
    page.goto(f"/threads/{thread.pk}/calls/1/sent/")
    sent = page.locator(".call-sent")
    expect(sent.locator("[data-sent-range]")).to_have_text("Messages 1123–1222 of 1222 (the newest)")
    expect(sent.locator(".msg.turn").last).to_contain_text("message number 1222")
    assert axe_violations(page) == []
    sent.locator("[data-sent-start]").click()
    expect(page.locator(".call-sent .msg.turn").first).to_contain_text("message number 1")
    expect(page.locator("[data-sent-range]")).to_have_text("Messages 1–100 of 1222")
    page.locator("[data-sent-newest]").click()
    expect(page.locator(".call-sent .msg.turn").last).to_contain_text("message number 1222")
    # from the thread page's call card, the same view opens in place at the newest
    page.goto(f"/threads/{thread.pk}/")
    page.locator("[data-call='1'] [data-call-sent]").click()
    expect(page.locator("[data-call='1'] .call-sent .msg.turn").last).to_contain_text("message number 1222")
    assert page.problems == []
