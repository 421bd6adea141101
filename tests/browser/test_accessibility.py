"""Every dashboard page, desktop (1440x900) and phone (390x844): axe-core finds no violations,
and a screenshot of each goes to test-artifacts/ to be looked at."""

import json

import pytest
from playwright.sync_api import expect

from contextstore.models import Collapse
from contextstore.services.blocks import block_upsert
from contextstore.services.collapses import collapse_create
from contextstore.services.datasets import dataset_add_range
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.sharing import share_link_create
from contextstore.services.state import state_write
from contextstore.services.summaries import summarize_range_request
from tests.browser.conftest import ARTIFACTS, axe_violations, in_view, screenshot
from tests.conftest import messages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"1440": (1440, 900), "390": (390, 844)}


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="a11y-1", user_id="alice", agent="helpdesk",
                             title="Refund for order 4711", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    sent = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Where is my order?"}]
    event_append(thread=thread, actor=actor, events=[
        *messages(6, words=12),
        {"type": "LLMCallStart", "call_id": "m1", "run_id": "run-1",
         "data": {"model": "gpt-4o", "messages": sent}},
        {"type": "LLMComplete", "call_id": "m1", "run_id": "run-1",
         "data": {"model": "gpt-4o", "input_tokens": 900, "output_tokens": 40, "cost": 0.002}},
        {"type": "LLMOutput", "role": "assistant", "run_id": "run-1",
         "content": "## Plan\n\n- look up the order\n- refund\n\n```sh\nrefund 4711\n```"},
        {"type": "ToolCall", "run_id": "run-1", "content": "lookup",
         "parts": [{"type": "tool_call", "id": "t1", "name": "lookup_order", "arguments": {"order": 4711}}]},
        {"type": "ToolResult", "run_id": "run-1", "content": "shipped", "data": {"tool_call_id": "t1"}},
        {"type": "Error", "run_id": "run-1", "content": "Payment gateway timed out", "data": {"code": 504}},
        {"type": "LLMCallStart", "call_id": "m2", "run_id": "run-1",
         "data": {"model": "gpt-4o", "messages": [*sent, {"role": "assistant", "content": "Shipped."}]}},
        {"type": "LLMComplete", "call_id": "m2", "run_id": "run-1", "data": {"model": "gpt-4o"}},
    ])
    block_upsert(thread=thread, name="persona", value="You are a patient support agent.",
                 placement="prefix", actor=actor)
    state_write(thread=thread, state={"plan": ["look up order"]}, actor=actor)
    state_write(thread=thread, state={"plan": ["look up order", "refund"]}, actor=actor)
    collapse_create(thread=thread, start_position=1, end_position=3, summary_text="Greetings.",
                    actor=actor)
    return thread


@pytest.fixture
def job(thread, actor):
    """A summary job no worker will take (none runs in these tests): its page polls, queued."""
    return summarize_range_request(thread=thread, start_position=4, end_position=6, actor=actor)


@pytest.fixture
def dataset(thread, actor):
    return dataset_add_range(dataset_name="refunds", thread=thread, start_position=4, end_position=6,
                             actor=actor).dataset


@pytest.fixture
def shared(thread, actor) -> str:
    """A share link's page, as anyone holding it opens it."""
    return f"/share/{share_link_create(session=thread.session, kind='session', actor=actor)[1]}/"


def pages(thread, job, dataset) -> dict[str, str]:
    """Every page of the dashboard a browser can open (fragments excluded)."""
    t, s = f"/threads/{thread.pk}", f"/sessions/{thread.session_id}"
    return {"sessions": "/", "session": f"/sessions/{thread.session_id}/", "thread": f"{t}/",
            "thread-around": f"{t}/?around=8", "thread-search": f"{t}/?q=refund&type=LLMOutput",
            "model-view": f"{t}/context/",
            "call-sent": f"{t}/calls/7/sent/", "call-diff": f"{t}/calls/13/diff/",
            "run-waterfall": f"{t}/runs/run-1/spans/",
            "session-cache": f"/sessions/{thread.session_id}/cache/", "workspace-cache": "/cache/",
            "collapse": f"{t}/collapses/{Collapse.objects.get(thread=thread).pk}/",
            "state-diff": f"{t}/state/diff/?a=1&b=2", "job": f"/jobs/{job.pk}/",
            "replay": f"{t}/calls/7/replay/", "activity": f"{t}/activity/",
            "event-comments": f"{t}/events/5/comments/", "session-comments": f"{s}/comments/",
            "session-scores": f"{s}/scores/", "trends": "/trends/", "datasets": "/datasets/",
            "dataset": f"/datasets/{dataset.pk}/", "alerts": "/alerts/", "not-found": "/threads/987654321/"}


SIDE_TABS = ("context", "blocks", "state", "runs", "memory")


@pytest.mark.parametrize("size", SIZES)
def test_every_page_and_every_side_tab_has_no_axe_violations(browser, live_server, page, thread, job,
                                                               dataset, shared, size):
    viewport = dict(zip(("width", "height"), SIZES[size], strict=True))
    page.set_viewport_size(viewport)
    found = {}

    def check(on, name):
        screenshot(on, f"{name}-{size}")
        violations = axe_violations(on)
        if violations:
            found[name] = violations

    for name, url in pages(thread, job, dataset).items():
        response = page.goto(url)
        assert response.status == (404 if name == "not-found" else 200), name
        expect(page.locator("main")).to_be_visible()
        check(page, name)
        if name in ("thread", "thread-around"):
            # every side-panel tab, not only the one open when the page loads
            for tab in SIDE_TABS:
                page.locator(f"[data-side-tab={tab}]").click()
                expect(page.locator(f"[data-side-tab={tab}]")).to_have_attribute("aria-pressed", "true")
                page.locator("#context-panel").scroll_into_view_if_needed()
                check(page, f"{name}-side-{tab}")
    # the login page, as someone not logged in sees it
    context = browser.new_context(viewport=viewport, base_url=live_server.url)
    anonymous = context.new_page()
    anonymous.goto("/")
    expect(anonymous.locator("input[name=username]")).to_be_visible()
    check(anonymous, "login")
    anonymous.goto(shared)  # a share link, opened without an account
    expect(anonymous.locator("main")).to_be_visible()
    check(anonymous, "shared")
    context.close()
    # the report stays next to the screenshots, to read when this fails
    (ARTIFACTS / f"axe-{size}.json").write_text(json.dumps(found, indent=1))
    assert found == {}, found
    assert [p for p in page.problems if "987654321" not in p] == [], page.problems


def test_popovers_close_with_escape_and_outside_clicks_and_the_skip_link_works(page, thread):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"/threads/{thread.pk}/")
    page.keyboard.press("Tab")
    expect(page.locator(".skip-link")).to_be_focused()
    expect(page.locator(".skip-link")).to_be_visible()
    page.keyboard.press("Enter")
    expect(page.locator("#timeline-scroll")).to_be_focused()
    page.click("summary:has-text('Reset…')")
    expect(page.locator(".confirm[open] .confirm-box")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator(".confirm[open]")).to_have_count(0)
    expect(page.locator("summary:has-text('Reset…')")).to_be_focused()
    page.click("summary:has-text('Clear context…')")
    expect(page.locator(".confirm[open]")).to_have_count(1)
    page.click("h1")
    expect(page.locator(".confirm[open]")).to_have_count(0)
    assert page.problems == [], page.problems


def test_the_first_event_is_two_tab_stops_away_and_the_page_has_one_h1(page, thread):
    """Keyboard: Tab reaches the skip link first, Enter moves to the timeline, the next Tab is
    inside the first event (the page put 54 stops before it). Outline: one h1, the thread's
    name; an agent's Markdown heading ("## Plan") is no heading of the page."""
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"/threads/{thread.pk}/")
    in_an_event = "() => !!document.activeElement.closest('#timeline-scroll article')"
    page.keyboard.press("Tab")
    expect(page.locator(".skip-link")).to_be_focused()
    page.keyboard.press("Enter")
    stops = 1
    while not page.evaluate(in_an_event):
        page.keyboard.press("Tab")
        stops += 1
        assert stops < 60, "no event reached"
    assert stops == 2, stops
    expect(page.locator("h1")).to_have_count(1)
    expect(page.locator("h1")).to_have_text(thread.name)
    expect(page.get_by_role("heading", name="Plan")).to_have_count(0)
    expect(page.locator(".content.md .md-h", has_text="Plan")).to_be_visible()
    assert page.problems == [], page.problems


def test_the_side_panel_is_sticky_tabs_that_keep_their_choice(page, thread):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"/threads/{thread.pk}/")
    panel = page.locator("#context-panel")
    expect(panel.locator("[data-side-tab=context]")).to_have_attribute("aria-pressed", "true")
    expect(panel.locator("#gauge")).to_be_visible()
    expect(panel.locator("#state")).to_be_hidden()
    for tab, shown in (("blocks", "[data-block=persona]"), ("state", "#state"),
                       ("runs", "text=Runs"), ("memory", "text=Memories of alice")):
        panel.locator(f"[data-side-tab={tab}]").click()
        expect(panel.locator(shown).first).to_be_visible()
        expect(panel.locator("#gauge")).to_be_hidden()
        screenshot(page, f"side-{tab}-1440")
    page.reload()
    expect(panel.locator("[data-side-tab=memory]")).to_have_attribute("aria-pressed", "true")
    page.locator("#timeline-scroll").scroll_into_view_if_needed()
    page.mouse.wheel(0, 600)
    expect(panel.locator(".side-tabs")).to_be_in_viewport()
    assert page.problems == [], page.problems


def test_a_permalink_to_an_event_inside_a_call_card_opens_the_card_in_view(page, thread):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"/threads/{thread.pk}/?around=8")  # #8 is the LLMComplete of the call #7–#8
    expect(page.locator("[data-call='7']")).to_be_visible()
    assert in_view(page, "[data-call='7']")
    assert page.locator("[data-call='7']").evaluate("e => e.getBoundingClientRect().top >= 0")
    assert page.problems == [], page.problems
