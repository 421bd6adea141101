"""An OTLP-derived call shared from its session page: the person who opens the link, logged
out, reads the model's reply (the span's gen_ai.output.messages), not "No reply was logged"."""

import json

import pytest
from django.test import Client
from playwright.sync_api import expect

from contextstore.models import Event, Thread
from project.celery import app
from tests.browser.conftest import screenshot
from tests.otlp.conftest import export, span

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def derive_eagerly(settings):
    """The derivation pass an export queues runs in the exporting request (as in tests/otlp)."""
    saved = app.conf.task_always_eager, app.conf.task_eager_propagates
    settings.CELERY_TASK_ALWAYS_EAGER = True
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


def test_a_shared_otlp_call_shows_its_reply_to_someone_logged_out(browser, page, live_server, token,
                                                                  derive_eagerly):
    chat = span("00f067aa0ba90210", "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.conversation.id": "conv-browser",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
            {"type": "text", "content": "Weather in Rome?"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "It is warm in <b>Rome</b>."}]}])})
    response = Client().post("/otlp/v1/traces", data=json.dumps(export(chat)),
                             content_type="application/json", headers={"Authorization": f"Bearer {token[1]}"})
    assert response.status_code == 200
    thread = Thread.objects.get()
    seq = Event.objects.get(type="LLMCallStart").seq
    # the editor makes a link to the call on the session page
    page.goto(f"/sessions/{thread.session_id}/")
    page.select_option("#share-kind", "call")
    page.fill("#share-seq", str(seq))
    page.click("button:text-is('Create read-only link')")
    url = page.locator("#new-share-link input").input_value()
    # someone else opens it logged out
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    anonymous = context.new_page()
    assert anonymous.goto(url).status == 200
    shared = anonymous.locator("#shared-call")
    expect(shared).to_contain_text("Weather in Rome?")
    expect(shared.locator("[data-call-reply]")).to_contain_text("It is warm in <b>Rome</b>.")
    expect(shared.locator("[data-call-reply] b")).to_have_count(0)  # agent text stays text
    expect(shared).not_to_contain_text("No reply was logged")
    screenshot(anonymous, "shared-otlp-call")
    context.close()
    assert page.problems == []
