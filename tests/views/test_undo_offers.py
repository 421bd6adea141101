"""After each dashboard action the page says what happened and offers the undo, once; the
undo control is an ordinary form that takes the action back."""

import re

import pytest

from contextstore.models import Clear, Collapse, ContextBlock, Event, Thread
from contextstore.services.blocks import block_upsert
from contextstore.services.events import event_append
from contextstore.services.state import state_write
from tests.conftest import messages
from tests.views.conftest import HTMX


@pytest.fixture
def history(thread, actor):
    event_append(thread=thread, events=messages(5, words=6), actor=actor)
    return thread


def undo_form(html: str) -> tuple[str, dict[str, str]]:
    """The Undo form of the page's undo bar: (action url, hidden fields)."""
    bar = re.search(r'<div class="notice undo-bar".*?</div>', html, re.S)
    assert bar, "no undo bar on the page"
    action = re.search(r'<form method="post" action="([^"]+)"', bar.group(0)).group(1)
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', bar.group(0)))
    fields.pop("csrfmiddlewaretoken", None)
    return action, fields


def test_clear_then_undo_from_the_offer_brings_the_events_back(editor_client, history, actor):
    state_write(thread=history, summary="so far", actor=actor)
    editor_client.post(f"/threads/{history.pk}/clear/")
    page = editor_client.get(f"/threads/{history.pk}/").content.decode()
    assert "Cleared 5 events and the summary from the working context." in page
    action, fields = undo_form(page)
    assert action == f"/threads/{history.pk}/clears/{Clear.objects.get().pk}/undo/"
    # The offer is shown once.
    assert "undo-bar" not in editor_client.get(f"/threads/{history.pk}/").content.decode()

    assert editor_client.post(action, fields).status_code == 302

    history.refresh_from_db()
    assert history.active_event_count == 5 and history.summary == "so far"
    page = editor_client.get(f"/threads/{history.pk}/").content.decode()
    assert "5 events are back in the working context, and the summary with them." in page


def test_an_earlier_clear_can_be_uncleared_from_the_clears_panel(editor_client, history, actor):
    from contextstore.services.threads import thread_clear_context

    clear = thread_clear_context(thread=history, actor=actor)
    page = editor_client.get(f"/threads/{history.pk}/").content.decode()
    assert f'action="/threads/{history.pk}/clears/{clear.pk}/undo/"' in page
    editor_client.post(f"/threads/{history.pk}/clears/{clear.pk}/undo/")
    assert Event.objects.filter(thread=history, status="active").count() == 5


def test_fork_offers_to_delete_the_fork_and_deleting_keeps_the_parent(editor_client, history):
    response = editor_client.post(f"/threads/{history.pk}/fork/",
                                  {"start_position": 2, "end_position": 4, "name": "branch"})
    child = Thread.objects.get(name="branch")
    assert response["Location"] == f"/threads/{child.pk}/"
    page = editor_client.get(response["Location"]).content.decode()
    assert "Forked 3 events of main into branch." in page and "Delete fork…" in page
    action, fields = undo_form(page)
    assert action == f"/threads/{child.pk}/delete/"

    response = editor_client.post(action, fields)

    assert response["Location"] == f"/threads/{history.pk}/"
    assert not Thread.objects.filter(pk=child.pk).exists()
    assert Event.objects.filter(thread=history).count() == 5
    page = editor_client.get(response["Location"]).content.decode()
    assert "Deleted the fork branch; main is unchanged. A deleted fork cannot be brought back." in page


def test_a_thread_that_is_not_a_fork_cannot_be_deleted(editor_client, history):
    response = editor_client.post(f"/threads/{history.pk}/delete/", **HTMX)
    assert response.status_code == 409 and "not a fork" in response.content.decode()
    assert Thread.objects.filter(pk=history.pk).exists()


@pytest.mark.parametrize("action", ["reset", "reset-all"])
def test_reset_offers_to_restore_the_revision_before_it(editor_client, history, actor, action):
    state_write(thread=history, state={"plan": ["a"]}, actor=actor)
    history.refresh_from_db()
    before = history.revision
    editor_client.post(f"/threads/{history.pk}/{action}/")
    action_url, fields = undo_form(editor_client.get(f"/threads/{history.pk}/").content.decode())
    assert (action_url, fields) == (f"/threads/{history.pk}/state/restore/", {"revision": str(before)})
    editor_client.post(action_url, fields)
    history.refresh_from_db()
    assert history.state == {"plan": ["a"]}


def test_collapse_offers_its_undo(editor_client, history):
    editor_client.post(f"/threads/{history.pk}/collapse/",
                       {"start_position": 2, "end_position": 3, "summary": "middle"})
    action, fields = undo_form(editor_client.get(f"/threads/{history.pk}/").content.decode())
    assert action == f"/threads/{history.pk}/collapses/{Collapse.objects.get().pk}/undo/"
    editor_client.post(action, fields)
    assert Collapse.objects.get().undone_at is not None


def test_block_delete_offers_to_put_the_block_back_as_it_was(editor_client, history, actor):
    block_upsert(thread=history, name="persona", value="Be <brief>.", placement="prefix", order=3,
                 actor=actor)
    panel = editor_client.post(f"/threads/{history.pk}/blocks/delete/", {"name": "persona"},
                               **HTMX).content.decode()
    assert "Deleted the block persona." in panel and "Be &lt;brief&gt;." in panel
    action, fields = undo_form(panel)
    assert fields == {"name": "persona", "kind": "value", "value": "Be <brief>.".replace("<", "&lt;")
                      .replace(">", "&gt;"), "placement": "prefix", "order": "3"}
    editor_client.post(action, {**fields, "value": "Be <brief>."}, **HTMX)
    block = ContextBlock.objects.get(thread=history)
    assert (block.name, block.value, block.placement, block.order) == ("persona", "Be <brief>.",
                                                                       "prefix", 3)


def test_confirmations_say_what_can_be_undone(editor_client, history):
    page = editor_client.get(f"/threads/{history.pk}/").content.decode()
    assert "un-clear brings these events back" in page
    assert "writes back the revision from before the reset" in page
    assert "Nothing is deleted</strong>: the previous state" not in page
