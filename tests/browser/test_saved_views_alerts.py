"""Saved views and alerts in a real browser: filters chosen on the session list saved as a
shared view, the page left and the view opened again from its menu with the same filters; an
alert rule made on the alerts page (its secret shown once), checked after a costly call, and
the header's banner shown. axe finds nothing at 1280x800 or 390x844."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from contextstore.models import AlertRule, SavedView
from contextstore.services.sessions import session_ensure
from tests.browser.conftest import axe_violations, screenshot
from tests.monitoring.conftest import call, make_thread
from tests.monitoring.conftest import receiver as webhook  # noqa: F401 - the fixture, as `webhook`

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
XSS = "<img src=x onerror=alert(1)>"


def test_filters_saved_as_a_view_open_again_from_its_menu(page, workspace, actor, member):
    session_ensure(workspace=workspace, key="b-1", agent="billing", actor=actor)
    session_ensure(workspace=workspace, key="s-1", agent="search", actor=actor)
    page.goto("/")
    expect(page.locator("h1")).to_have_text("Sessions")
    page.get_by_label("Agent", exact=True).select_option("billing")
    page.wait_for_url("**agent=billing**")
    expect(page.locator("#results")).not_to_contain_text("s-1")
    page.locator("#saved-views summary").click()
    page.get_by_label("Save the current filters as").fill(f"Billing {XSS}")
    page.get_by_label("Shared with the workspace").check()
    page.get_by_role("button", name="Save view").click()
    page.wait_for_url("**view=**")
    view = SavedView.objects.get()
    assert (view.query, view.shared, view.owner_id) == ("agent=billing&sort=-activity", True, member.pk)
    expect(page.locator("[data-current-view]")).to_have_text(f"Billing {XSS}")

    page.goto("/?view=0")
    expect(page.locator("#results")).to_contain_text("s-1")
    page.locator("#saved-views summary").click()
    page.get_by_role("link", name=f"Billing {XSS}").click()
    page.wait_for_url(f"**/?agent=billing&sort=-activity&view={view.pk}")
    expect(page.get_by_label("Agent", exact=True)).to_have_value("billing")
    expect(page.locator("#results")).to_contain_text("b-1")
    expect(page.locator("#results")).not_to_contain_text("s-1")

    page.locator("#saved-views summary").click()
    page.get_by_label(f"Rename “Billing {XSS}”").fill("Billing only")
    page.get_by_role("button", name="Rename").click()
    expect(page.locator("[data-current-view]")).to_have_text("Billing only")
    for width, height in ((1280, 800), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        if not page.locator("#saved-views details").evaluate("d => d.open"):
            page.locator("#saved-views summary").click()
        screenshot(page, f"saved-views-{width}")
        assert axe_violations(page) == []
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert page.problems == []


def test_an_alert_rule_made_on_the_alerts_page_fires_into_the_header(page, workspace, actor, member, request,
                                                                     settings):
    receiver = request.getfixturevalue("webhook")  # a local receiver; the delivery runs in the request
    request.getfixturevalue("eager_tasks")
    page.goto("/")
    page.get_by_role("navigation", name="Workspace pages").get_by_role("link", name="Alerts").click()
    expect(page.locator("h1")).to_contain_text("Alerts")
    form = page.locator("#new-rule")
    form.get_by_label("Name").fill(f"Spend {XSS}")
    form.get_by_label("Figure").select_option("cost")
    form.get_by_label("Fires when it is").select_option("gte")
    form.get_by_label("Threshold").fill("2")
    form.get_by_label("Over the last").select_option("15")
    form.get_by_label("Webhook URL (optional)").fill(receiver.url)
    form.get_by_role("button", name="Create rule").click()
    expect(page.locator("[data-new-secret]")).to_be_visible()
    rule = AlertRule.objects.get()
    expect(page.locator("[data-secret]")).to_have_text(rule.secret)
    expect(page.locator(f"#rule-{rule.pk} [data-state]")).to_have_text("ok")
    expect(page.locator("[data-alert-banner]")).to_have_count(0)

    call(make_thread(workspace, actor), actor, minutes_ago=1, cost=2.0, now=timezone.now())
    page.get_by_role("button", name=f"Check now: Spend {XSS}").click()
    expect(page.locator(f"#rule-{rule.pk} [data-state]")).to_have_text("firing")
    expect(page.locator("[data-secret]")).to_have_count(0)  # shown once
    banner = page.locator("[data-alert-banner]")
    expect(banner).to_contain_text("1 alert firing")
    expect(banner).to_contain_text(f"Spend {XSS}")
    expect(page.locator("#alert-events tbody tr").first).to_contain_text("fired")
    expect(page.locator("#alert-events [data-delivery]").first).to_contain_text(
        "delivered, 1 attempt, HTTP 200")
    assert len(receiver.received) == 1
    page.get_by_role("navigation", name="Workspace pages").get_by_role("link", name="Sessions").click()
    expect(page.locator("[data-alert-banner]")).to_contain_text(
        "Cost (USD) at or above 2 over 15 minutes")
    for width, height in ((1280, 800), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        for url in ("/alerts/", "/"):
            page.goto(url)
            expect(page.locator("[data-alert-banner]")).to_be_visible()
            screenshot(page, f"alerts-{width}-{'alerts' if 'alerts' in url else 'sessions'}")
            assert axe_violations(page) == []
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    # a higher threshold: the rule starts again from ok, and its next check finds nothing to say
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/alerts/")
    page.locator(f"#rule-{rule.pk} .rule-edit summary").click()
    page.locator(f"#rule-{rule.pk}-threshold").fill("5")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(f"#rule-{rule.pk} [data-state]")).to_have_text("ok")
    page.get_by_role("button", name=f"Check now: Spend {XSS}").click()
    expect(page.locator(f"#rule-{rule.pk} [data-state]")).to_have_text("ok")
    expect(page.locator("[data-alert-banner]")).to_have_count(0)
    assert page.problems == []
