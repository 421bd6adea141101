"""A person opens a session from the list and reads when it expires."""

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from contextstore.services import retention
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_session_page_says_when_the_session_expires(page, workspace, actor):
    retention.retention_policy_set(target=workspace, actor=actor, session_days=30)
    session = session_ensure(workspace=workspace, key="soon-gone", title="Soon gone", actor=actor)[0]
    event_append(thread=thread_ensure(session=session, actor=actor)[0], actor=actor,
                 events=[{"type": "Message", "role": "user", "content": "hello"}])
    session.refresh_from_db()
    page.goto("/")
    page.click("a:text-is('Soon gone')")
    expires = (session.last_activity_at + timedelta(days=30)).strftime("%Y-%m-%d")
    expect(page.locator("#retention")).to_contain_text("Expires")
    expect(page.locator("#retention")).to_contain_text(expires)
    assert page.problems == [], page.problems
