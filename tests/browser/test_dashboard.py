"""The dashboard in a real browser: what a person does, step by step."""

import re

import pytest
from playwright.sync_api import expect

from contextstore.models import Collapse, Event, Job
from contextstore.services.blocks import block_upsert
from contextstore.services.clientai import thread_reset, thread_set_input
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.state import state_write
from contextstore.services.workspaces import api_token_create
from tests.browser.conftest import screenshot, scroll_to, scroll_to_older
from tests.conftest import messages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

XSS = "<img src=x onerror=alert(1)><script>alert(2)</script>"


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="support-4711", user_id="alice", agent="helpdesk",
                             title="Refund for order 4711", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    events = messages(116, words=25)
    events[40] = {"type": "Error", "content": "Payment gateway timed out", "data": {"code": 504}}
    events[60] = {"type": "ToolCall", "content": "lookup_order", "call_id": "c-1",
                  "data": {"tool": "lookup_order", "args": {"order": 4711}}}
    events[110] = {"type": "BeforeAgentCall", "content": "calling model"}
    event_append(thread=thread, events=events, actor=actor)
    block_upsert(thread=thread, name="persona", value="You are a patient support agent.",
                 placement="prefix", actor=actor)
    state_write(thread=thread, state={"plan": ["look up order"], "refund": None}, actor=actor)
    state_write(thread=thread, state={"plan": ["look up order", "refund"], "refund": 42.5}, actor=actor)
    for i in range(8):
        session_ensure(workspace=workspace, key=f"onboarding-{i}", user_id=f"user-{i}", agent="tutor",
                       title=f"Onboarding call {i}", actor=actor)
    return thread


def events_shown(page) -> list[int]:
    return [int(s) for s in page.locator("#timeline .event[data-seq]").evaluate_all(
        "els => els.map(e => e.dataset.seq)")]


def test_log_in_and_search_sessions_as_you_type(browser, live_server, member, thread):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=live_server.url)
    page = context.new_page()
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    page.fill("#id_username", "bea")
    page.fill("#id_password", "pw-for-tests-123")
    page.click("button[type=submit]")
    expect(page.locator(".session-row")).to_have_count(9)
    screenshot(page, "sessions-1280")
    page.fill("input[name=q]", "refund")
    expect(page.locator(".session-row")).to_have_count(1)
    expect(page.locator(".session-row")).to_contain_text("Refund for order 4711")
    expect(page).to_have_url(re.compile(r"q=refund"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.fill("input[name=q]", "")
    expect(page.locator(".session-row")).to_have_count(9)
    screenshot(page, "sessions-390")
    context.close()


def test_open_a_thread_scroll_to_load_older_events_and_filter_by_type(page, thread):
    page.goto("/")
    page.click("text=Refund for order 4711")
    page.click("a:text-is('main')")
    expect(page.locator("#e116")).to_be_visible()
    assert events_shown(page)[0] == 66
    screenshot(page, "thread-1280")
    scroll_to_older(page)
    expect(page.locator("#e16")).to_be_attached()
    assert events_shown(page)[0] == 16
    page.click("label.chip:has-text('Error')")
    expect(page.locator("#timeline .event")).to_have_count(1)
    expect(page.locator("#timeline .event")).to_contain_text("Payment gateway timed out")
    expect(page).to_have_url(re.compile(r"type=Error"))
    page.go_back()
    expect(page).not_to_have_url(re.compile(r"type=Error"))
    expect(page.locator("#e116")).to_be_attached()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/threads/{thread.pk}/")
    screenshot(page, "thread-390")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/threads/{thread.pk}/context/?budget=600")
    expect(page.locator("#prefix-status")).to_be_visible()
    screenshot(page, "model-view-1280")
    assert page.problems == [], page.problems


def test_runtime_events_show_with_one_click(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    expect(page.locator("#e110")).to_be_visible()
    expect(page.locator("#e111")).to_have_count(0)
    page.check("input[name=runtime]")
    expect(page.locator("#e111.runtime")).to_be_visible()


def test_the_filters_stay_reachable_above_a_long_history(page, thread):
    """Going to the top of the page for the filters does not load older events over them
    (which would push the filters away on every try); scrolling up the timeline still does."""
    page.goto(f"/threads/{thread.pk}/")
    expect(page.locator("#e116")).to_be_in_viewport()
    scroll_to(page, "top")
    page.wait_for_timeout(600)  # long enough for an older page to come in and move the page
    assert page.evaluate("window.scrollY") == 0
    expect(page.locator("#e65")).to_have_count(0)
    expect(page.locator("#timeline-scroll > .older a")).to_be_in_viewport()
    page.click("label.chip:has-text('Error')")
    expect(page.locator("#timeline .event")).to_have_count(1)
    page.uncheck("label.chip:has-text('Error') input")
    expect(page.locator("#e116")).to_be_attached()
    scroll_to(page, "bottom")
    scroll_to_older(page)  # a reader scrolling up through the timeline reaches older events
    expect(page.locator("#e65")).to_be_attached()
    assert page.evaluate("window.scrollY") > 1000  # ...in above what they were reading
    # from the top, the waiting link opens the older page
    scroll_to(page, "top")
    page.click("#timeline-scroll > .older a:text('Load older events')")
    expect(page).to_have_url(re.compile(r"before=16"))
    expect(page.locator("#e15")).to_be_attached()
    assert page.problems == [], page.problems


def test_a_new_event_appears_live_after_an_api_append(page, thread, workspace, actor):
    _, raw = api_token_create(workspace=workspace, name="agent", actor=actor)
    page.goto(f"/threads/{thread.pk}/")
    expect(page.locator("#e116")).to_be_visible()
    response = page.request.post(
        f"/api/v1/threads/{thread.pk}/events/", headers={"Authorization": f"Bearer {raw}"},
        data={"events": [{"type": "Message", "role": "user", "content": "Is my refund done yet?"}]},
    )
    assert response.status == 201, response.text()
    expect(page.locator("#e117")).to_contain_text("Is my refund done yet?", timeout=8000)
    assert page.evaluate("document.querySelectorAll('#e117').length") == 1
    expect(page.locator("#thread-stats")).to_contain_text("117 events")  # the header follows
    assert page.problems == [], page.problems


def select_range(page, first: int, last: int) -> None:
    page.click(f"#e{first} .pick")
    page.click(f"#e{last} .pick", modifiers=["Shift"])
    expect(page.locator("#selection")).to_be_visible()
    expect(page.locator("[data-range-label]")).to_have_text(f"#{first} – #{last}")


def test_collapse_a_range_and_undo_it(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    select_range(page, 100, 105)
    page.click("#selection summary:has-text('Collapse')")
    page.fill("#collapse-summary", "Customer confirmed the order number twice.")
    page.click("text=Collapse range")
    card = page.locator(".card-summary")
    expect(card).to_contain_text("#100–#105 · 6 events")
    expect(card).to_contain_text("Customer confirmed the order number twice.")
    expect(page.locator("#e102")).to_have_count(0)
    card.locator("text=Show originals").click()
    expect(card.locator(".members .event")).to_have_count(6)
    card.scroll_into_view_if_needed()
    screenshot(page, "thread-summary-card-1280")
    card.locator("text=Undo collapse").click()
    expect(page.locator(".card-summary")).to_have_count(0)
    expect(page.locator("#e102")).to_be_visible()
    assert Collapse.objects.get().undone_at is not None


@pytest.mark.worker
def test_summarize_a_range_with_the_worker(make_fs_worker, page, thread):
    """A real `celery -A project worker` (the embedded filesystem broker, the test database)
    picks up the job the click queued; the page polls the job's status until it is done."""
    make_fs_worker().start()
    page.goto(f"/threads/{thread.pk}/")
    select_range(page, 90, 99)
    page.click("text=Summarize with worker")
    expect(page.locator("#job-status .job")).to_be_visible()
    expect(page.locator(".card-summary")).to_contain_text("#90–#99", timeout=30_000)
    expect(page.locator(".card-summary")).to_contain_text("Worker")
    assert Job.objects.get().status == Job.Status.DONE


def test_clear_context_and_see_events_greyed(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    page.click("summary:has-text('Clear context')")
    expect(page.locator(".confirm-box").first).to_contain_text("Nothing is deleted")
    page.click("button:has-text('Clear context')")
    expect(page.locator("#e116.is-cleared")).to_be_visible()
    assert Event.objects.filter(thread=thread, status="cleared").count() == 116


def test_fork_a_range_into_a_new_thread(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    select_range(page, 112, 116)
    page.click("#selection summary:has-text('Fork')")
    page.fill("#fork-name", "what-if")
    page.click("text=Fork into new thread")
    expect(page.locator("h1")).to_have_text("what-if")
    expect(page.locator("#timeline .event")).to_have_count(5)
    expect(page.locator(".page-head")).to_contain_text("forked from")
    page.click(".crumbs a:has-text('Refund for order 4711')")
    expect(page.locator(".fork-mark")).to_have_count(1)
    screenshot(page, "session-1280")


def gauge_prefix(page) -> int:
    return int(page.locator("[data-section=prefix]").inner_text().split()[-1].replace("k", "00"))


def test_edit_a_block_and_see_the_gauge_change(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    before = gauge_prefix(page)
    expect(page.locator("[data-block=persona]")).to_be_hidden()  # the side panel opens on Context
    page.click("[data-side-tab=blocks]")
    block = page.locator("[data-block=persona]")
    block.locator("summary:has-text('Edit')").click()
    block.locator("textarea[name=value]").fill("You are a patient support agent. " * 20)
    block.locator("button:has-text('Save')").click()
    expect(page.locator("[data-block=persona]")).to_contain_text("v2")
    expect(page.locator("[data-block=persona]")).to_be_visible()  # the tab survives the swap
    assert gauge_prefix(page) > before
    width = float(page.locator("#gauge .g-prefix").get_attribute("width"))
    assert width > 0
    assert page.problems == [], page.problems


def test_diff_two_state_revisions(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    page.click("[data-side-tab=state]")
    page.select_option("select[name=a]", "1")
    page.select_option("select[name=b]", "2")
    page.click("button:has-text('Diff')")
    expect(page.locator("#diff-out .d-add", has_text='"refund": 42.5')).to_be_visible()
    expect(page.locator("#diff-out .d-del", has_text='"refund": null')).to_be_visible()


def test_a_reset_shows_every_changed_field_and_is_undone_from_the_diff(page, thread, actor):
    thread_set_input(thread=thread, input_data="Where is my refund?", actor=actor)
    thread_reset(thread=thread, actor=actor)  # r4: state, inputs and more back to empty
    page.goto(f"/threads/{thread.pk}/")
    page.click("[data-side-tab=state]")
    page.select_option("select[name=a]", "4")
    page.select_option("select[name=b]", "3")
    page.click("button:has-text('Diff')")
    for name in ("state", "current_input", "original_input"):
        expect(page.locator(f"#diff-out [data-field={name}]")).to_be_visible()
    page.locator("#diff-out").scroll_into_view_if_needed()
    screenshot(page, "document-diff")
    page.click("#diff-out button:has-text('Restore r3')")
    expect(page.locator("#state")).to_contain_text("refund")
    thread.refresh_from_db()
    assert thread.current_input == "Where is my refund?" and thread.revision == 5
    assert page.problems == [], page.problems


def test_agent_markup_is_shown_as_text_and_never_runs(page, thread, actor):
    event_append(thread=thread, events=[{"type": "Message", "content": XSS}], actor=actor)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"/threads/{thread.pk}/")
    expect(page.locator("#e117 .content")).to_have_text(XSS)
    page.wait_for_timeout(500)
    assert dialogs == []
    assert page.locator("#e117 img").count() == 0 and page.locator("#e117 script").count() == 0


def test_admin_works_under_the_content_security_policy(page, member, thread):
    member.is_staff = member.is_superuser = True
    member.save()
    page.goto("/admin/contextstore/apitoken/add/")
    page.select_option("select[name=workspace]", label="acme")
    page.fill("input[name=name]", "ci")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist")).to_contain_text("not shown again")
    page.goto("/admin/contextstore/event/?type__exact=Error")
    expect(page.locator("#result_list")).to_contain_text("Error")
    assert [p for p in page.problems if "favicon" not in p] == []


def test_an_expired_session_sends_the_live_tail_to_the_login_page(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    expect(page.locator("#e116")).to_be_visible()
    page.context.clear_cookies()
    expect(page).to_have_url(re.compile(r"/accounts/login/"), timeout=8000)
    expect(page.locator("#e116")).to_have_count(0)
