"""Clear the context from the dashboard, then take it back with the offered Undo."""

import pytest
from playwright.sync_api import expect

from contextstore.models import Event
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.state import state_write
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="undo-1", title="Undo me", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": f"question number {i}"} for i in range(1, 6)])
    state_write(thread=thread, summary="the user asked five questions", actor=actor)
    return thread


def test_clear_the_context_and_unclear_it_from_the_dashboard(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    expect(page.locator("#timeline .event")).to_have_count(5)

    page.click("summary:has-text('Clear context…')")
    expect(page.locator(".confirm-box").first).to_contain_text("un-clear brings these events back")
    page.click("button:text-is('Clear context')")

    expect(page.locator("#undo-bar")).to_contain_text("Cleared 5 events and the summary")
    expect(page.locator("#timeline .event.is-cleared")).to_have_count(5)
    assert Event.objects.filter(thread=thread, status="active").count() == 0
    screenshot(page, "cleared-with-undo")

    page.click("#undo-bar button:has-text('Undo')")

    expect(page.locator("#undo-bar")).to_contain_text("5 events are back in the working context")
    expect(page.locator("#timeline .event")).to_have_count(5)
    expect(page.locator("#timeline .event.is-cleared")).to_have_count(0)
    for i in range(1, 6):
        expect(page.locator("#timeline")).to_contain_text(f"question number {i}")
    expect(page.locator("#context-panel")).to_contain_text("the user asked five questions")
    assert Event.objects.filter(thread=thread, status="active").count() == 5
    assert page.problems == []
