"""The thread page as a reader in a real browser: Markdown and raw, copy, JSON paths, tool
cards, and "load the rest" of an oversized event."""

import pytest
from playwright.sync_api import expect

from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANSWER = """## Refund plan

1. look up **order 4711**
2. refund it

| step | tool |
|------|------|
| 1 | lookup_order |

```python
refund(order=4711)
```
<script>document.title = "pwned"</script>
"""


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="reader-1", title="Reader", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    big = "".join(f"row {i}: " + "lorem ipsum dolor sit amet " * 3 + "\n" for i in range(1200))
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "Refund order 4711 please", "run_id": "r-1"},
        {"type": "ToolCall", "role": "assistant", "content": "Calling lookup_order", "run_id": "r-1",
         "parts": [{"type": "tool_call", "id": "t1", "name": "lookup_order", "arguments": {"order": 4711}}],
         "occurred_at": "2026-01-05T10:00:00Z"},
        {"type": "ToolResult", "role": "tool", "content": "found", "run_id": "r-1",
         "data": {"tool_call_id": "t1", "order": {"id": 4711, "items": [{"sku": "A-1", "qty": 2}]}},
         "occurred_at": "2026-01-05T10:00:00.800Z"},
        {"type": "LLMOutput", "role": "assistant", "content": ANSWER, "run_id": "r-1"},
        {"type": "PythonOutput", "content": big, "run_id": "r-1"},
    ])
    return thread


def test_read_markdown_toggle_raw_copy_code_and_json_paths_and_load_the_rest(page, thread):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"/threads/{thread.pk}/")
    answer = page.locator("#e4")
    expect(answer.locator(".content.md .md-h2")).to_have_text("Refund plan")  # bold text, not a heading
    expect(answer.locator(".content.md table td").nth(1)).to_have_text("lookup_order")
    expect(answer.locator(".content.md")).to_contain_text('<script>document.title = "pwned"</script>')
    assert page.title() != "pwned"

    answer.locator("[data-raw-toggle]").click()
    expect(answer.locator(".content.raw")).to_be_visible()
    expect(answer.locator(".content.raw")).to_contain_text("## Refund plan")
    expect(answer.locator(".content.md")).to_be_hidden()
    answer.locator("[data-raw-toggle]").click()
    expect(answer.locator(".content.md")).to_be_visible()

    answer.locator("[data-copy-code]").click()
    expect(page.locator("html")).to_have_attribute("data-copied", "refund(order=4711)\n")

    tool = page.locator('.tool-card[data-tool="2"]')
    expect(tool).to_contain_text("lookup_order")
    expect(tool).to_contain_text("1 result · 800 ms")
    expect(tool.locator("#e3")).to_be_visible()
    tool.locator("#e3 summary:text-is('[1 items]')").click()  # deeper levels start folded
    tool.locator("#e3 summary:text-is('{2 keys}')").last.click()
    tool.locator('#e3 [data-copy-path="$.order.items[0].sku"]').click()
    expect(page.locator("html")).to_have_attribute("data-copied", "$.order.items[0].sku")
    tool.locator('#e3 [data-copy-path="$.order.items[0].sku"] + .j-val').click()
    expect(page.locator("html")).to_have_attribute("data-copied", "A-1")
    expect(page.locator('.run-head[data-run="r-1"]')).to_be_visible()
    screenshot(page, "reader-1280")

    big = page.locator("#e5")
    expect(big).not_to_contain_text("row 1199")
    big.locator("[data-load-rest]").click()
    expect(page.locator("#e5")).to_contain_text("row 1199")
    expect(page.locator("#e5 [data-load-rest]")).to_have_count(0)

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/threads/{thread.pk}/")
    expect(page.locator("#e4 .content.md .md-h2")).to_be_visible()
    screenshot(page, "reader-390")
    assert page.problems == [], page.problems
