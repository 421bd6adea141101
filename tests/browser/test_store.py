"""A person browses the long-term store, reads an item an agent wrote, edits it, sees its
versions and undoes the change, in a real browser; axe finds nothing on either page."""

import pytest
from playwright.sync_api import expect

from contextstore.models import StoreItem
from contextstore.services.common import Actor
from contextstore.services.store import store_batch
from contextstore.storespec import check_ops
from tests.browser.conftest import axe_violations, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_browse_read_edit_and_undo_a_store_item(page, workspace):
    store_batch(workspace=workspace, actor=Actor.system("agent"), ops=check_ops([
        {"op": "put", "namespace": ["memories", "ann"], "key": "notes/diet.md",
         "value": {"content": "Ann is vegan <img src=x onerror=alert(1)>"}},
        {"op": "put", "namespace": ["memories", "bob"], "key": "k", "value": {"content": "b"}}]))
    page.goto("/")
    page.get_by_role("link", name="Store", exact=True).click()
    expect(page.locator("#store-namespaces")).to_contain_text("memories / ann")
    assert axe_violations(page) == []
    page.get_by_role("link", name="memories / ann").click()
    page.get_by_role("link", name="notes/diet.md").click()
    expect(page.locator("#item-value")).to_contain_text("<img src=x onerror=alert(1)>")
    assert page.locator("img").count() == 0  # shown as text, never markup
    page.locator("#edit-value").fill('{"content": "Ann is vegetarian"}')
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.locator("#item-version")).to_have_text("2")
    expect(page.locator("#item-value")).to_contain_text("Ann is vegetarian")
    expect(page.locator("#item-versions tbody tr")).to_have_count(2)
    assert axe_violations(page) == []
    screenshot(page, "store-item")
    page.get_by_role("button", name="Undo the last change").click()
    expect(page.locator("#item-version")).to_have_text("3")
    expect(page.locator("#item-value")).to_contain_text("Ann is vegan")
    expect(page.locator("#item-versions tbody tr").first).to_contain_text("Restore (as version 1)")
    assert StoreItem.objects.get(key="notes/diet.md").value["content"].startswith("Ann is vegan")
    assert page.problems == []
