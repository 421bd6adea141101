"""Issue 50's polish, seen in the browser: the runs chart's axes and legend, and more."""

import pytest
from playwright.sync_api import expect

from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import axe_violations, screenshot
from tests.conftest import messages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def call(run: str, n: int, tokens: int, cost: float) -> list[dict]:
    return [{"type": "LLMCallStart", "call_id": f"{run}-{n}", "run_id": run,
             "data": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}},
            {"type": "LLMComplete", "call_id": f"{run}-{n}", "run_id": run,
             "data": {"model": "gpt-4o", "input_tokens": tokens, "output_tokens": 10, "cost": cost}}]


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="polish-1", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=[
        *messages(4), *call("run-1", 1, 1990, 0.004), *call("run-2", 1, 490, 0.001),
        *call("run-3", 1, 3990, 0.008)])
    return thread


def test_the_runs_chart_has_labelled_axes_and_a_legend(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    page.locator("[data-side-tab=runs]").click()
    chart = page.locator(".run-chart")
    expect(chart).to_be_visible()
    svg = chart.locator("svg")
    expect(svg).to_have_attribute("role", "img")
    # both value axes say their top, middle and zero; the bottom one says the runs' order
    expect(svg.locator("[data-axis=tokens] text")).to_have_text(["4k", "2k", "0"])
    expect(svg.locator("[data-axis=cost] text").first).to_contain_text("0.008")
    expect(svg.locator("[data-axis=runs] text")).to_have_text(["oldest", "newest", "runs"])
    expect(chart.locator(".legend li")).to_have_text(["input + output tokens (left axis)",
                                                      "cost (right axis)"])
    expect(svg.locator("rect.c-tokens")).to_have_count(3)
    # the chart's accessible name says what it shows
    name = page.evaluate("""() => { const s = document.querySelector('.run-chart svg');
        return s.getAttribute('aria-labelledby').split(' ')
          .map(id => document.getElementById(id).textContent).join(' '); }""")
    assert "Runs" in name and "latest 3 runs" in name
    # the tick labels stay inside the SVG's box (not clipped off its edges)
    box = svg.bounding_box()
    for text in svg.locator("text").all():
        t = text.bounding_box()
        inside = box["x"] - 1 <= t["x"] and t["x"] + t["width"] <= box["x"] + box["width"] + 1
        assert inside, text.text_content()
    screenshot(page, "runs-chart")
    assert axe_violations(page, "[data-tab=runs]") == []
    assert page.problems == [], page.problems


def test_the_favicon_is_served_and_the_login_page_has_one_h1_and_no_404(browser, live_server):
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    problems = []
    page.on("console", lambda m: m.type == "error" and problems.append(m.text))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"{r.status} {r.url}"))
    page.goto("/accounts/login/")
    expect(page.locator("h1")).to_have_count(1)
    expect(page.locator("#id_password")).to_have_attribute("autocomplete", "current-password")
    href = page.locator("link[rel=icon]").get_attribute("href")
    icon = page.request.get(href)
    assert icon.status == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    page.wait_for_timeout(300)  # the browser's own favicon request
    assert problems == [], problems
    context.close()


@pytest.fixture
def long_thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="polish-long", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    events = messages(240, words=30)
    events[59] = {"type": "Error", "content": "Payment gateway timed out", "data": {"code": 504}}
    events[179] = {"type": "Error", "content": "Disk full", "data": {"code": 507}}
    event_append(thread=thread, actor=actor, events=events)
    return thread


def landed(page, seq: int) -> dict:
    return page.evaluate("""seq => { const e = document.getElementById('e' + seq);
        const r = e.getBoundingClientRect();
        const whole = r.top >= 0 && r.bottom <= window.innerHeight;
        return {inView: whole || (r.top < window.innerHeight / 2 && r.bottom > 0),
                focused: document.activeElement === e, marked: e.classList.contains('target')}; }""", seq)


def test_jump_and_next_error_land_on_their_target_in_view_and_focused(page, long_thread):
    page.goto(f"/threads/{long_thread.pk}/", timeout=30_000)
    page.fill("#jump-to", "100")
    page.locator("form.jump button[type=submit]", has_text="Go").click()
    page.wait_for_url("**around=100**")
    expect(page.locator("#e100")).to_be_in_viewport()
    assert landed(page, 100) == {"inView": True, "focused": True, "marked": True}
    # the next error after #100 is #180, far below: it lands there too
    page.locator("form.jump button", has_text="Next error").click()
    page.wait_for_url("**around=180**")
    expect(page.locator("#e180")).to_be_in_viewport()
    assert landed(page, 180) == {"inView": True, "focused": True, "marked": True}
    page.locator("form.jump button", has_text="Previous error").click()
    page.wait_for_url("**around=60**")
    expect(page.locator("#e60")).to_be_in_viewport()
    assert landed(page, 60) == {"inView": True, "focused": True, "marked": True}
    screenshot(page, "jump-next-error")
    assert page.problems == [], page.problems
