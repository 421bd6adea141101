"""A person opens a session and finds themselves, and an agent's token, under "Viewed by"."""

import pytest
from playwright.sync_api import expect

from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.workspaces import api_token_create
from tests.browser.conftest import axe_violations, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_session_page_lists_who_viewed_it(page, live_server, workspace, actor):
    session = session_ensure(workspace=workspace, key="watched", title="Watched", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=[{"type": "Message", "role": "user", "content": "hi"}])
    token, raw = api_token_create(workspace=workspace, name="agent", scope="read", actor=actor)
    # the agent reads its context over HTTP, as it does before a model call
    response = page.request.get(f"{live_server.url}/api/v1/threads/{thread.pk}/context/",
                                headers={"Authorization": f"Bearer {raw}"})
    assert response.status == 200

    page.goto("/")
    page.click("a:text-is('Watched')")
    panel = page.locator("#viewed-by")
    expect(panel.get_by_role("heading", name="Viewed by")).to_be_visible()
    rows = panel.locator("tbody tr")
    expect(rows).to_have_count(2)
    # The token's row by its label, the person's as the other one: has_text matches any part of a
    # row, case-insensitively, and "bea" once matched inside a random token label ("cs_4_a-BeA4P").
    agent_row = rows.filter(has_text=f"token:{token.prefix}")
    expect(agent_row).to_contain_text("context (API)")
    reader_row = rows.filter(has_not_text=f"token:{token.prefix}")
    expect(reader_row.locator("td").first).to_have_text("bea session page", use_inner_text=True)
    panel.scroll_into_view_if_needed()
    screenshot(page, "session-viewed-by")
    assert axe_violations(page) == []
    assert page.problems == [], page.problems
