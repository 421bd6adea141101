"""Playwright (sync API) driving Debian's chromium against pytest-django's live server."""

import os
import shutil
import threading
from pathlib import Path

import pytest
from django.conf import settings
from django.db import transaction
from django.test import Client

from contextstore.models import Membership

# The real-worker fixtures (a `celery -A project worker` on the embedded filesystem broker).
from tests.worker.conftest import filesystem_broker, make_fs_worker  # noqa: F401

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make between
# browser steps are ordinary synchronous calls, so Django's async-safety guard does not apply.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


# One browser for the browser tests, closed after the last of them: Playwright's sync API keeps
# an event loop running in the main thread while it lives, and the async tests that follow
# (tests/mcp) could not start theirs ("Cannot run the event loop while another loop is running").
@pytest.fixture(scope="package")
def browser():
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run"],
        )
        yield browser
        browser.close()


@pytest.fixture
def member(transactional_db, workspace):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("bea", password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=user, role=Membership.Role.EDITOR)
    return user


class Problems(list):
    """Console errors and CSP violations seen by a page; a test ends by asserting there are none."""


@pytest.fixture
def page(browser, live_server, member):
    """A 1280x800 page logged in as an editor (session cookie set directly, no login form)."""
    client = Client()
    client.force_login(member)
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=live_server.url)
    context.add_cookies([{
        "name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
        "url": live_server.url,
    }])
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.problems = Problems()
    page.on("console", lambda m: m.type == "error" and page.problems.append(f"{m.text} at {m.location}"))
    page.on("response", lambda r: r.status >= 400 and page.problems.append(f"{r.status} {r.url}"))
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    yield page
    context.close()


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"


def axe_violations(page, within: str | None = None) -> list[dict]:
    """axe-core's violations on the page as it stands (WCAG 2.1 A/AA and best practices), or
    in the part of it `within` selects (what changed since the whole page was checked).

    Injected with evaluate(), which the page's CSP does not govern, so the CSP under test stays
    as strict as in production. `make test` installs the pinned package (see the Makefile)."""
    if not AXE.exists():
        if os.environ.get("CI"):  # CI runs `make test`, which installs it: missing is a failure
            pytest.fail("axe-core is not installed; `make test` runs npm install axe-core")
        pytest.skip("axe-core is not installed (make test runs npm install axe-core)")
    page.evaluate(AXE.read_text())
    return page.evaluate("""within => axe.run(within || document, {resultTypes: ["violations"]}).then(r =>
        r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                nodes: v.nodes.slice(0, 4).map(n => n.target.join(" "))})))""", within)


def scroll_to(page, where: str) -> None:
    """Scroll the page (the thread page has one scroll: the timeline has no box of its own)."""
    page.evaluate("top => window.scrollTo(0, top ? 0 : document.documentElement.scrollHeight)",
                  where == "top")


def scroll_to_older(page) -> None:
    """Scroll up to the timeline's "load older events" marker, as a reader scrolling up through
    the timeline reaches it (its top at the window's top; the page's header stays out of view)."""
    page.locator("#timeline-scroll > .older").first.evaluate("e => e.scrollIntoView({block: 'start'})")


def in_view(page, selector: str) -> bool:
    """Whether the element is (at least partly) inside the browser's viewport."""
    return page.locator(selector).evaluate(
        "e => { const r = e.getBoundingClientRect(); return r.bottom > 0 && r.top < window.innerHeight; }")


def hold_third_batch(monkeypatch) -> tuple[threading.Event, list[int]]:
    """services/operations' third transaction waits (up to 30 s) until the returned event is set,
    so a page can be seen showing a long operation's first batches done. The list counts the
    transactions begun; clear it to count from there."""
    from contextstore.services import operations

    go_on, begun = threading.Event(), []

    class Held:
        on_commit = staticmethod(transaction.on_commit)

        @staticmethod
        def atomic(*args, **kwargs):
            begun.append(1)
            if len(begun) == 3:
                go_on.wait(30)
            return transaction.atomic(*args, **kwargs)

    monkeypatch.setattr(operations, "transaction", Held)
    return go_on, begun
