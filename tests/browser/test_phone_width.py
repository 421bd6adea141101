"""At a phone's width (390 px) no page scrolls sideways: the document is no wider than the
window (a wide table or code block scrolls inside its own box), and the top bar is one row."""

import pytest
from playwright.sync_api import expect

from tests.browser.test_accessibility import dataset, job, pages, shared, thread  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_no_page_overflows_sideways_at_390_px(browser, live_server, page, thread, job, dataset,  # noqa: F811
                                               shared):  # noqa: F811
    page.set_viewport_size({"width": 390, "height": 844})
    page.set_default_timeout(30_000)
    wide = {}
    urls = {**pages(thread, job, dataset), "shared": shared}
    for name, url in urls.items():
        page.goto(url, wait_until="domcontentloaded")
        expect(page.locator("main")).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > 390:
            culprits = page.evaluate("""() => Array.from(document.querySelectorAll('body *'))
                .filter(e => e.getBoundingClientRect().right > 391
                             && getComputedStyle(e).position !== 'fixed')
                .slice(-3).map(e => e.tagName + '.' + e.className + '#' + e.id)""")
            wide[name] = (width, culprits)
        bar = page.locator("header.topbar").bounding_box()
        if bar is not None and bar["height"] > 56:  # one row of 32 px controls and its padding
            wide[f"{name} top bar"] = bar["height"]
    assert wide == {}, wide
