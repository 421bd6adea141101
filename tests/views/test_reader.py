"""The thread page as a reader: Markdown, JSON trees, tool cards, runs, cut and compressed pages."""

import gzip
import re

from contextstore.services.events import event_append
from contextstore.services.runs import run_finish, run_start
from tests.conftest import messages

MARKDOWN = """# Plan

- look up **order 4711**
- refund it

| step | tool |
|------|------|
| 1 | lookup |

```python
print("<b>hi</b>")
```

[click](javascript:alert(1)) <script>alert(2)</script> <img src=x onerror=alert(3)>
"""


def page(client, thread, **params) -> str:
    return client.get(f"/threads/{thread.pk}/", params).content.decode()


def test_markdown_is_rendered_sanitized_with_a_raw_toggle_and_copyable_code(editor_client, thread,
                                                                             actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMOutput", "role": "assistant", "content": MARKDOWN},
        {"type": "Message", "role": "user", "content": "plain words, nothing to render"},
    ])
    html = page(editor_client, thread)
    md = html[html.index('class="content md'):html.index('class="content raw"')]
    # an agent's heading is bold text, never a heading of the page's outline (one h1: the thread)
    assert '<p class="md-h md-h1"><strong>Plan</strong></p>' in md
    assert "<h1" not in md and html.count("<h1") == 1
    assert "<strong>order 4711</strong>" in md and "<table>" in md
    assert ('<button type="button" class="btn small copy" data-copy-code>Copy</button>'
            '<pre><code class="language-python">') in md
    assert "print(\"&lt;b&gt;hi&lt;/b&gt;\")" in md
    # nothing of the agent's markup survives as markup
    assert "<script>alert" not in html and "<img" not in md and 'href="javascript' not in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt; &lt;img src=x onerror=alert(3)&gt;" in md
    raw = html[html.index('<pre class="content raw" hidden>'):]
    assert raw.startswith('<pre class="content raw" hidden># Plan\n\n- look up **order 4711**')
    assert "data-raw-toggle" in html
    plain = html[html.index("plain words"):][:200]
    assert html.count('class="content md') == 1 and "</div>" in plain


def test_json_data_is_a_tree_with_paths_and_long_strings_cut(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "ToolResult", "content": "ok", "data": {"rows": [{"id": 7, "odd key": "y" * 5000}]}}])
    html = page(editor_client, thread)
    assert 'data-copy-path="$.rows[0].id"' in html
    assert 'data-copy-path="$.rows[0][&quot;odd key&quot;]"' in html
    assert "y" * 1024 in html and "y" * 1025 not in html and "3976 more characters" in html
    full = editor_client.get(f"/threads/{thread.pk}/events/1/").content.decode()
    assert "y" * 5000 in full and "<html" not in full


def test_a_tool_call_and_its_results_are_one_card_with_name_and_duration(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "ToolCall", "role": "assistant", "content": "Calling lookup",
         "parts": [{"type": "tool_call", "id": "t1", "name": "lookup_order", "arguments": {"order": 4711}}],
         "occurred_at": "2026-01-05T10:00:00Z"},
        {"type": "Message", "role": "user", "content": "meanwhile"},
        {"type": "ToolResult", "role": "tool", "content": "shipped", "data": {"tool_call_id": "t1"},
         "occurred_at": "2026-01-05T10:00:01.500Z"},
        {"type": "ToolCall", "content": "search", "call_id": "c9", "data": {"tool": "search"}},
        {"type": "ToolResult", "content": "found", "call_id": "c9"},
        {"type": "ToolResult", "content": "orphan", "data": {"tool_call_id": "nope"}},
    ])
    html = page(editor_client, thread)
    cards = re.findall(r'<section class="tool-card" data-tool="(\d+)"', html)
    assert cards == ["1", "4"]
    first = html[html.index('data-tool="1"'):]
    first = first[:first.index("</section>")]
    assert "<b>lookup_order</b>" in first and "1 result · 1.5 s" in first
    assert 'data-seq="1"' in first and 'data-seq="3"' in first and "meanwhile" not in first
    assert "<b>search</b>" in html and 'data-seq="6"' in html  # the orphan stays on its own
    assert html.index('data-seq="2"') < html.index('data-tool="4"')


def test_turns_are_grouped_by_run_with_durations_and_times_say_their_zone(editor_client, thread,
                                                                           actor):
    run = run_start(thread=thread, run_id="run-a", actor=actor)[0]
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "content": "one", "run_id": "run-a"},
        {"type": "Message", "content": "two", "run_id": "run-a"}])
    run_finish(run=run, status="completed", actor=actor)
    event_append(thread=thread, actor=actor,
                 events=[{"type": "Message", "content": "three", "run_id": "run-b"}])
    html = page(editor_client, thread)
    assert re.findall(r'class="run-head" data-run="([^"]+)"', html) == ["run-a", "run-b"]
    head = html[html.index('data-run="run-a"'):][:400]
    assert "completed ·" in head and re.search(r"· \d+ ms ·| \d+\.\d s ·", head)
    assert "running since" in html[html.index('data-run="run-b"'):][:400]
    stamp = r'<time datetime="[^"]+" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ UTC \(\+0000\)">'
    assert re.search(stamp, html)


def test_oversized_content_is_cut_on_the_server_and_the_page_is_compressed(editor_client, thread,
                                                                            actor):
    big = "".join(f"line {i}: " + "lorem ipsum dolor sit amet " * 3 + "\n" for i in range(1200))
    assert len(big) > 100_000
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "content": "before"}, {"type": "ToolResult", "content": big},
        {"type": "Message", "content": "after"}])
    response = editor_client.get(f"/threads/{thread.pk}/", HTTP_ACCEPT_ENCODING="gzip")
    assert response["Content-Encoding"] == "gzip"
    transferred = len(response.content)
    html = gzip.decompress(response.content).decode()
    assert transferred <= 100_000 and len(html) < 100_000, (transferred, len(html))
    assert big[:4096] in html and big[:4097] not in html and "line 1199" not in html
    assert f'hx-get="/threads/{thread.pk}/events/2/"' in html and "Load the rest (" in html
    rest = editor_client.get(f"/threads/{thread.pk}/events/2/", HTTP_HX_REQUEST="true").content.decode()
    assert "line 1199" in rest and "Load the rest" not in rest


def test_the_event_view_is_404_elsewhere(editor_client, outsider_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[{"type": "Message", "content": "hi"}])
    assert outsider_client.get(f"/threads/{thread.pk}/events/1/").status_code == 404
    assert editor_client.get(f"/threads/{thread.pk}/events/2/").status_code == 404


def test_only_html_is_compressed(editor_client, thread, actor):
    from contextstore.services.workspaces import api_token_create

    event_append(thread=thread, actor=actor, events=messages(30))
    page = editor_client.get(f"/threads/{thread.pk}/", HTTP_ACCEPT_ENCODING="gzip")
    assert page["Content-Encoding"] == "gzip" and "Accept-Encoding" in page["Vary"]
    _, raw = api_token_create(workspace=thread.workspace, name="agent", actor=actor)
    api = editor_client.get(f"/api/v1/threads/{thread.pk}/events/", HTTP_ACCEPT_ENCODING="gzip",
                            HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert api.status_code == 200 and not api.has_header("Content-Encoding")
