"""In a real browser: the session list's filters (model, errors, cost, tokens, last activity)
with load more and shareable URLs; "what the model sees" paged; the export's size first."""

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from contextstore.models import Session, Thread
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import axe_violations, screenshot
from tests.conftest import messages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def call(model: str, cost: str) -> list[dict]:
    return [{"type": "LLMCallStart", "content": "calling", "data": {"model": model}},
            {"type": "LLMComplete", "content": "done", "data": {"model": model, "cost": cost}}]


def make(workspace, actor, key: str, events: list[dict], days_ago: int = 0, tokens: int | None = None):
    session = session_ensure(workspace=workspace, key=key, title=key, actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, events=events, actor=actor)
    fields = {"last_activity_at": timezone.now() - timedelta(days=days_ago)}
    if tokens is not None:
        fields["token_total"] = tokens
    Session.objects.filter(pk=session.pk).update(**fields)
    return thread


def rows(page) -> list[str]:
    return page.locator(".session-row .title-cell > a").all_inner_texts()


def shows(page, names: list[str]) -> None:
    """Waits until the list shows exactly these sessions, in this order."""
    expect(page.locator(".session-row .title-cell > a")).to_have_text(names)


def test_filter_sessions_by_model_errors_cost_tokens_and_days(page, workspace, actor):
    make(workspace, actor, "pricey-gpt", call("gpt-4o", "3.5") + [{"type": "Error", "content": "boom"}],
         tokens=9000)
    make(workspace, actor, "cheap-gpt", call("gpt-4o", "0.02"), days_ago=4, tokens=200)
    make(workspace, actor, "claude-run", call("claude-sonnet", "1.0"), days_ago=1, tokens=3000)
    page.goto("/")
    expect(page.locator(".session-row")).to_have_count(3)

    page.select_option("select[name=model]", "gpt-4o")
    shows(page, ["pricey-gpt", "cheap-gpt"])
    expect(page).to_have_url(re.compile(r"model=gpt-4o"))
    page.check("input[name=errors]")
    shows(page, ["pricey-gpt"])
    page.uncheck("input[name=errors]")
    shows(page, ["pricey-gpt", "cheap-gpt"])
    page.fill("input[name=cost_max]", "1")
    shows(page, ["cheap-gpt"])
    page.fill("input[name=cost_max]", "")
    page.select_option("select[name=model]", "")
    shows(page, ["pricey-gpt", "claude-run", "cheap-gpt"])
    page.fill("input[name=tokens_min]", "1000")
    shows(page, ["pricey-gpt", "claude-run"])
    page.fill("input[name=tokens_min]", "")
    page.fill("input[name=active_to]", str(timezone.localdate() - timedelta(days=2)))
    shows(page, ["cheap-gpt"])
    shared = page.url
    assert "active_to=" in shared
    screenshot(page, "sessions-filtered-1280")

    # The URL is the filter: opened afresh it shows the same list and the same inputs.
    page.goto(shared)
    shows(page, ["cheap-gpt"])
    expect(page.locator("input[name=active_to]")).to_have_value(str(timezone.localdate() - timedelta(days=2)))
    assert axe_violations(page) == []
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "sessions-filtered-390")
    assert axe_violations(page) == []
    page.set_viewport_size({"width": 1280, "height": 800})

    # An upside-down range says what is wrong instead of showing a list.
    page.fill("input[name=cost_min]", "5")
    page.fill("input[name=cost_max]", "1")
    alert = page.locator("#filter-problems")
    expect(alert).to_contain_text("The cost range is upside down")
    expect(page.locator(".session-row")).to_have_count(0)
    page.fill("input[name=cost_min]", "")
    shows(page, ["cheap-gpt"])
    # The refusal above answered 400: the response, chromium's and htmx's notes of it.
    refused = [p for p in page.problems if re.search(r"^400 |status of 400|Error Code 400", p)]
    assert len(refused) == 3
    assert [p for p in page.problems if p not in refused] == []
    page.problems.clear()
    assert page.problems == []


def test_the_search_finds_the_sessions_whose_events_hold_the_text(page, workspace, actor):
    make(workspace, actor, "crashed", [{"type": "Message", "role": "tool",
                                        "content": "FileNotFoundError: <no such file>"}], days_ago=1)
    make(workspace, actor, "in-data", [{"type": "Error", "content": "failed",
                                        "data": {"exception": "FileNotFoundError"}}], days_ago=2)
    make(workspace, actor, "fine", [{"type": "Message", "role": "user", "content": "all good"}])
    page.goto("/")
    shows(page, ["fine", "crashed", "in-data"])

    page.fill("input[name=q]", "filenotfounderror")
    shows(page, ["crashed", "in-data"])
    expect(page).to_have_url(re.compile(r"q=filenotfounderror"))
    expect(page.locator(".text-hit a")).to_have_text(["1 event matches", "1 event matches"])
    assert axe_violations(page) == []
    page.locator(".text-hit a").first.click()
    expect(page).to_have_url(re.compile(r"/threads/\d+/\?q=filenotfounderror"))
    expect(page.get_by_text("FileNotFoundError: <no such file>")).to_be_visible()
    assert page.problems == []


def test_load_more_keeps_the_filters(page, workspace, actor):
    for i in range(56):
        make(workspace, actor, f"s-{i:02d}", call("gpt-4o" if i % 8 else "other", f"{i}.5"))
    page.goto("/?model=gpt-4o&sort=-cost")
    expect(page.locator(".session-row")).to_have_count(49)  # 56 minus the 7 "other" sessions
    assert rows(page)[:2] == ["s-55", "s-54"]
    page.goto("/")
    page.select_option("select[name=model]", "gpt-4o")
    page.fill("input[name=cost_min]", "2")
    matching = [i for i in range(56) if i % 8 and i + 0.5 >= 2]
    expect(page.locator(".session-row")).to_have_count(len(matching))  # 48: one page
    expect(page.locator("a.sort[data-sort=cost]")).to_have_attribute("href", re.compile("cost_min=2"))
    for i in range(3):
        make(workspace, actor, f"late-{i}", call("gpt-4o", "0.5" if i else "99"))
    page.click("a.sort[data-sort=cost]")  # most expensive first
    expect(page).to_have_url(re.compile(r"sort=-cost"))
    assert rows(page)[:2] == ["late-0", "s-55"]
    page.click("a.sort[data-sort=cost]")  # cheapest first, 50 a page
    expect(page).to_have_url(re.compile(r"model=gpt-4o.*cost_min=2.*sort=cost"))
    expect(page.locator(".session-row")).to_have_count(49)  # 48 and late-0; 0.5 is under 2
    page.fill("input[name=cost_min]", "0")
    expect(page.locator(".session-row")).to_have_count(50)
    page.click("text=Load more")
    expect(page.locator(".session-row")).to_have_count(len([i for i in range(56) if i % 8]) + 3)
    names = rows(page)
    assert len(names) == len(set(names)) and names[:2] == ["late-1", "late-2"] and names[-1] == "late-0"
    assert page.problems == []


def test_page_through_what_the_model_sees(page, thread, actor):
    Thread.objects.filter(pk=thread.pk).update(context_window=200_000)
    event_append(thread=thread, events=messages(130, words=5), actor=actor)
    page.goto(f"/threads/{thread.pk}/context/?budget=900000")
    expect(page.locator("#budget-capped")).to_contain_text("You asked for 900000 tokens")
    expect(page.locator("input[name=budget]")).to_have_value("200000")
    expect(page.locator(".pager").first).to_contain_text("Messages 1–50 of 130 · page 1 of 3")
    expect(page.locator(".msg .content").first).to_have_text(re.compile(r"^turn 0:"))
    page.locator(".pager").first.get_by_role("link", name="Next →").click()
    expect(page.locator(".pager").first).to_contain_text("page 2 of 3")
    expect(page).to_have_url(re.compile(r"page=2"))
    expect(page.locator(".msg .content").first).to_have_text(re.compile(r"^turn 50:"))
    expect(page.locator("#fits")).to_have_text("fits")
    page.locator(".pager").last.get_by_role("link", name="Next →").click()
    expect(page.locator(".msg")).to_have_count(30)
    screenshot(page, "model-view-page-3-1280")
    assert axe_violations(page) == []
    page.locator(".pager").first.get_by_role("link", name="← Previous").click()
    expect(page.locator(".msg .content").first).to_have_text(re.compile(r"^turn 50:"))
    page.go_back()
    expect(page.locator(".pager").first).to_contain_text("page 3 of 3")
    assert page.problems == []


def test_the_export_says_its_size_before_the_download(page, thread, actor):
    event_append(thread=thread, events=messages(40, words=20) + [
        {"type": "Message", "role": "user", "content": "ünïcode 模型 <b>x</b>"}], actor=actor)
    page.goto(f"/threads/{thread.pk}/")
    page.get_by_role("link", name="Export JSON…").click()
    expect(page.locator("[data-export-events]")).to_have_text("41")
    expect(page.locator("#export-download")).to_contain_text("Download JSON (")
    assert axe_violations(page) == []
    screenshot(page, "export-size-1280")
    with page.expect_download() as info:
        page.click("#export-download")
    data = json.loads(open(info.value.path(), encoding="utf-8").read())
    assert len(data["events"]) == 41 and data["events"][-1]["content"] == "ünïcode 模型 <b>x</b>"
    assert page.problems == []
