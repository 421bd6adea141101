"""LLM calls as cards in a real browser: open a call card, "as sent", diff with the previous; a
card at its start holding what the call produced; the run's waterfall."""

import pytest
from playwright.sync_api import expect

from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import axe_violations, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

XSS = "<img src=x onerror=alert(1)><script>alert(2)</script>"


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="calls-1", title="Two model calls", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    system = {"role": "system", "content": "You are a careful support agent."}
    q1 = {"role": "user", "content": "Where is order 4711?"}
    a1 = {"role": "assistant", "content": "It shipped on Monday."}
    q2 = {"role": "user", "content": XSS}
    for sent, usage in (([system, q1], (1200, 40)), ([system, q1, a1, q2], (1900, 85))):
        event_append(thread=thread, actor=actor, events=[
            {"type": "Message", "role": "user", "content": sent[-1]["content"]},
            {"type": "LLMCallStart", "call_id": f"turn-{usage[0]}",
             "data": {"model": "gpt-4o", "messages": sent}, "occurred_at": "2026-01-05T10:00:00Z"},
            {"type": "LLMComplete", "call_id": f"turn-{usage[0]}", "occurred_at": "2026-01-05T10:00:01.250Z",
             "data": {"model": "gpt-4o", "input_tokens": usage[0], "output_tokens": usage[1], "cost": 0.004,
                      "finish_reason": "stop"}},
        ])
    return thread


def test_open_a_call_card_see_what_it_sent_and_diff_it_with_the_previous_call(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    cards = page.locator("#timeline .call-card")
    expect(cards).to_have_count(2)
    last = cards.nth(1)
    expect(last).to_contain_text("gpt-4o")
    expect(last).to_contain_text("1.9k")
    expect(last).to_contain_text("1.2 s")
    expect(last).to_contain_text("stop")

    last.locator("[data-call-sent]").click()
    sent = last.locator(".call-sent")
    expect(sent).to_contain_text("You are a careful support agent.")
    expect(sent).to_contain_text("<script>alert(2)</script>")  # shown as text, never run
    expect(sent.locator(".msg")).to_have_count(4)
    screenshot(page, "call-card-as-sent-1280")

    last.locator("[data-call-diff]").click()
    diff = last.locator(".call-diff")
    expect(diff).to_contain_text("2 → 4 tools, system blocks and messages")
    # a few dozen tokens, under OpenAI's minimum cacheable prefix: nothing to keep, nothing lost
    expect(diff.locator("[data-cache=short][data-cause=append]")).to_be_visible()
    expect(diff.locator(".d-add")).to_have_count(2)
    screenshot(page, "call-card-diff-1280")

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/threads/{thread.pk}/calls/5/sent/")  # the second call starts at seq 5
    expect(page.locator(".call-sent .msg")).to_have_count(4)
    screenshot(page, "call-as-sent-390")
    page.click("text=Diff with previous call")
    expect(page.locator(".call-diff")).to_contain_text("entered")
    screenshot(page, "call-diff-390")
    assert page.problems == [], page.problems


def test_a_card_at_its_start_holds_the_reply_tool_calls_and_results_and_the_run_waterfall(page, workspace,
                                                                                          actor):
    session = session_ensure(workspace=workspace, key="calls-2", title="Weather", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    run = {"run_id": "run-7", "call_id": "c1"}
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "Weather in Paris?", "run_id": "run-7"},
        {"type": "LLMCallStart", "data": {"model": "gpt-4o"}, "occurred_at": "2026-01-05T10:00:00Z", **run},
        {"type": "Reasoning", "role": "assistant", "content": "", **run,
         "parts": [{"type": "thinking", "thinking": "Forecast first."}]},
        {"type": "ToolCall", "role": "assistant", "content": "", "occurred_at": "2026-01-05T10:00:01Z", **run,
         "parts": [{"type": "tool_call", "id": "t1", "name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"type": "ToolCall", "role": "assistant", "content": "", "occurred_at": "2026-01-05T10:00:01Z", **run,
         "parts": [{"type": "tool_call", "id": "t2", "name": "get_time", "arguments": {}}]},
        {"type": "ToolResult", "role": "tool", "content": "18 C and sunny", "data": {"tool_call_id": "t1"},
         "occurred_at": "2026-01-05T10:00:01.400Z", **run},
        {"type": "LLMOutput", "role": "assistant", "content": f"Sunny in Paris. {XSS}", **run},
        {"type": "LLMComplete", "occurred_at": "2026-01-05T10:00:02.500Z", **run,
         "data": {"model": "gpt-4o", "input_tokens": 900, "output_tokens": 40}},
    ])
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"/threads/{thread.pk}/")
        card = page.locator("#timeline .call-card")
        expect(card).to_have_count(1)
        expect(card).to_have_attribute("id", "e2")  # at its LLMCallStart, above what it produced
        outputs = card.locator("[data-outputs]")
        expect(outputs).to_contain_text("Sunny in Paris. <img src=x")  # text, never markup
        expect(outputs.locator(".tool-card")).to_have_count(2)
        weather = outputs.locator(".tool-card[data-tool='4']")
        expect(weather).to_contain_text("get_weather")
        expect(weather.locator("#e6")).to_contain_text("18 C and sunny")  # the result, nested
        expect(outputs.locator(".tool-card[data-tool='5'] [data-no-result]")).to_have_text("no result logged")
        outputs.locator("summary", has_text="thinking").click()
        expect(outputs).to_contain_text("Forecast first.")
        screenshot(page, f"call-card-outputs-{width}")
        assert axe_violations(page) == []

        page.locator(".run-head [data-waterfall]").click()
        expect(page.locator("h1")).to_contain_text("Run run-7: waterfall")
        bars = page.locator("#run-waterfall tbody tr")
        expect(bars).to_have_count(3)
        expect(bars.nth(0).locator("[data-duration]")).to_have_text("2.5 s")
        expect(bars.nth(1).locator("[data-duration]")).to_have_text("400 ms")
        expect(bars.nth(2).locator("[data-duration]")).to_have_text("—")
        screenshot(page, f"run-waterfall-{width}")
        assert axe_violations(page) == []
    assert page.problems == [], page.problems


def test_a_call_whose_logged_text_was_erased_says_so_in_its_card_and_as_sent_page(page, thread):
    from contextstore.models import StoredText

    StoredText.objects.filter(text__contains="careful support agent").delete()  # as an erasure does
    page.goto(f"/threads/{thread.pk}/")
    last = page.locator("#timeline .call-card").nth(1)
    last.locator("[data-call-sent]").click()
    sent = last.locator(".call-sent")
    expect(sent.locator("#messages-expired")).to_contain_text("1 message of this call is gone")
    expect(sent.locator(".msg")).to_have_count(3)
    page.goto(f"/threads/{thread.pk}/calls/5/sent/")
    expect(page.locator("#messages-expired")).to_be_visible()
    expect(page.locator(".call-sent")).not_to_contain_text("careful support agent")
    screenshot(page, "call-as-sent-expired-1280")
    assert page.problems == [], page.problems
