"""A conversation kept through the OpenAI Conversations API (the official `openai` SDK over HTTP
to the live server) in a real browser: its session and thread show the items, the tool call
paired with its output; deleted through the API it leaves the list, and reopening it in the
dashboard brings it back to the API."""

import openai
import pytest
from openai import OpenAI
from playwright.sync_api import expect

from contextstore.models import Session
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_conversation_reads_on_its_thread_page_and_a_delete_is_undone_there(page, live_server, token):
    api = OpenAI(base_url=f"{live_server.url}/openai/v1", api_key=token[1], max_retries=0)
    conversation = api.conversations.create(metadata={"topic": "weather"}, items=[
        {"role": "user", "content": "Weather in Lisbon?"},
        {"type": "function_call", "call_id": "call_9", "name": "weather",
         "arguments": "{\"city\": \"Lisbon\"}"},
        {"type": "function_call_output", "call_id": "call_9", "output": "21C and clear in Lisbon"},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "It is 21C and clear.", "annotations": []}]}])

    page.goto("/")
    page.click(f"text={conversation.id}")
    page.click("a:text-is('main')")
    events = page.locator("#timeline")
    for text in ("Weather in Lisbon?", "weather(", "21C and clear in Lisbon", "It is 21C and clear."):
        expect(events).to_contain_text(text)
    screenshot(page, "openai-conversation-thread")

    api.conversations.delete(conversation.id)
    with pytest.raises(openai.NotFoundError):
        api.conversations.retrieve(conversation.id)
    page.goto("/")
    expect(page.locator("#results")).not_to_contain_text(conversation.id)
    page.goto(f"/sessions/{Session.objects.get(key=conversation.id).pk}/")
    page.click("button:has-text('Reopen session')")
    expect(page.locator("button:has-text('Archive session')")).to_be_visible()
    assert api.conversations.retrieve(conversation.id).metadata == {"topic": "weather"}
    assert len(api.conversations.items.list(conversation.id).data) == 4
    assert page.problems == []
