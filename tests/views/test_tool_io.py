"""Readable tool I/O on the thread page (Markdown only for prose, output preformatted, JSON as a
tree, tool arguments inline) and failed tool results as errors on every page."""

import json
import re

from contextstore.models import Event, Session, Thread
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.templatetags.contextstore import call_signature, reader_text
from contextstore.toolcalls import ToolCall
from tests.views.conftest import HTMX

PYTEST_LOG = """============================= test session starts ==============================
collected 3 items

tests/test_api.py::test_it_refuses_a_stale_revision[sqlite] PASSED        [ 33%]
tests/test_api.py::test_it_keeps_the_order_of_*args* FAILED              [ 66%]
__init__.py <script>alert(1)</script>

=========================== short test summary info ============================
FAILED tests/test_api.py::test_it_keeps_the_order_of_*args* - assert 1 == 2"""


def page(client, thread, **params) -> str:
    return client.get(f"/threads/{thread.pk}/", params).content.decode()


# --- formatting (the template tags) --------------------------------------------------------------

def test_a_pytest_log_as_output_keeps_its_newlines_and_is_not_markdown():
    html = str(reader_text(PYTEST_LOG, kind="output"))
    assert html.startswith('<div class="reader"><pre class="content output">')
    assert "test_it_refuses_a_stale_revision[sqlite] PASSED        [ 33%]\n" in html
    assert "test_it_keeps_the_order_of_*args* FAILED" in html  # no <em>, no link
    assert "<em>" not in html and "<a " not in html and "data-raw-toggle" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html


def test_the_same_log_as_prose_would_have_been_markdown():
    """What the output kind avoids: `_` and `[` switch prose to Markdown."""
    assert 'class="content md' in str(reader_text(PYTEST_LOG, kind="prose"))


def test_json_output_is_a_foldable_tree_with_the_text_behind_raw():
    html = str(reader_text('{"rows": [{"id": 7, "name": "<b>x</b>"}], "ok": true}', kind="output"))
    assert '<div class="content tree"><div class="json-tree"><details class="j-node" open>' in html
    assert 'data-copy-path="$.rows[0].name"' in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert '<pre class="content raw" hidden>{&quot;rows&quot;' in html and "data-raw-toggle" in html
    assert "<b>x</b>" not in html
    # Not JSON, or a bare JSON scalar: preformatted text.
    assert 'class="content output"' in str(reader_text("[1, 2", kind="output"))
    assert 'class="content output"' in str(reader_text('"just a string"', kind="output"))


def test_a_long_json_output_is_cut_text_until_the_rest_is_loaded(editor_client, thread, actor):
    big = json.dumps({"rows": [{"id": i, "name": f"row {i}"} for i in range(400)]})
    event_append(thread=thread, actor=actor, events=[{"type": "ToolResult", "role": "tool", "content": big}])
    html = page(editor_client, thread)
    assert '<pre class="content output clamp">{&quot;rows&quot;' in html and "Load the rest (" in html
    rest = editor_client.get(f"/threads/{thread.pk}/events/1/", **HTMX).content.decode()
    assert 'data-copy-path="$.rows[199].name"' in rest and "… 200 more" in rest


def test_a_call_signature_shows_arguments_inline_and_cuts_long_ones():
    assert call_signature(ToolCall("t1", "run_tests", {"path": "tests/", "verbose": True})) == \
        'run_tests(path="tests/", verbose=true)'
    assert call_signature(ToolCall("t1", "read", '{"file": "a.py"}')) == 'read(file="a.py")'
    assert call_signature(ToolCall("t1", "shell", "ls -la")) == "shell(ls -la)"
    assert call_signature(ToolCall("t1", "noop", {})) == "noop()"
    long = call_signature(ToolCall("t1", "write", {"path": "x", "text": "y" * 500}))
    assert long == 'write(path="x", text="' + "y" * 39 + '…")'
    many = call_signature(ToolCall("t1", "f", {f"arg{i}": "v" * 30 for i in range(10)}))
    assert many.endswith(", …)") and len(many) < 200 and many.startswith('f(arg0="' + "v" * 30)


# --- the thread page -----------------------------------------------------------------------------

def test_tool_output_is_preformatted_and_prose_is_markdown(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMOutput", "role": "assistant", "content": "I'll run **the tests**."},
        {"type": "ToolResult", "role": "tool", "content": PYTEST_LOG, "data": {"tool_call_id": "t1"}},
        {"type": "PythonOutput", "content": "a_b [c](d)\nline two"},
    ])
    html = page(editor_client, thread)
    assert "<strong>the tests</strong>" in html
    result = html[html.index('id="e2"'):html.index('id="e3"')]
    assert '<pre class="content output">' in result and 'class="content md' not in result
    assert "[sqlite] PASSED        [ 33%]\n" in result
    output = html[html.index('id="e3"'):]
    assert '<pre class="content output">a_b [c](d)\nline two</pre>' in output


def test_a_tool_result_part_is_read_as_its_text(editor_client, thread, actor):
    """Anthropic-style results keep their text in a part: shown as written, not as a JSON string."""
    event_append(thread=thread, actor=actor, events=[
        {"type": "ToolResult", "role": "user", "content": "", "parts": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
             "content": [{"type": "text", "text": "line_1 [x]\nline_2"}]}]}])
    html = page(editor_client, thread)
    assert '<pre class="content output">line_1 [x]\nline_2</pre>' in html
    assert re.search(r'<article class="event t-toolresult is-error', html)


def test_tool_call_arguments_are_inline(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "ToolCall", "role": "assistant", "content": "Calling run_tests",
         "parts": [{"type": "tool_call", "id": "t1", "name": "run_tests",
                    "arguments": {"path": "tests/", "marker": "<slow>"}}]}])
    html = page(editor_client, thread)
    assert 'run_tests(path=&quot;tests/&quot;, marker=&quot;&lt;slow&gt;&quot;)</code>' in html
    assert '<code class="call-sig" title="{&quot;path&quot;' in html
    assert "<details><summary>parts</summary>" in html  # the parts stay, folded


def failing(call_id: str = "t1") -> list[dict]:
    return [
        {"type": "ToolCall", "role": "assistant", "content": "Calling run_tests",
         "parts": [{"type": "tool_call", "id": call_id, "name": "run_tests",
                    "arguments": {"path": "tests/"}}]},
        {"type": "ToolResult", "role": "tool", "content": "Traceback (most recent call last):\n  boom",
         "data": {"tool_call_id": call_id}},
    ]


def test_a_failed_tool_result_is_red_counted_and_reached_by_next_error(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "hi"}, *failing(),
        {"type": "ToolResult", "role": "tool", "content": "ok", "data": {"is_error": False}},
        {"type": "ToolResult", "role": "tool", "content": "denied", "data": {"isError": True}},
    ])
    assert list(Event.objects.filter(thread=thread, is_error=True).values_list("seq", flat=True)) == [3, 5]
    thread.refresh_from_db()
    assert thread.error_count == 2 and Session.objects.get(pk=thread.session_id).error_count == 2
    html = page(editor_client, thread)
    assert re.search(r'<article class="event t-toolresult is-error[^"]*" id="e3"', html)
    assert re.search(r'<article class="event t-toolresult[^"]*" id="e4"', html).group().count("is-error") == 0
    assert '<span class="badge bad failed">failed</span>' in html[html.index('id="e3"'):]
    assert re.search(r'id="stat-errors"><b>2</b> errors', html)
    tool_card = html[html.index('data-tool="2"'):]
    assert '<span class="badge bad">failed</span>' in tool_card[:tool_card.index("</section>")]
    jump = f"/threads/{thread.pk}/jump/"
    assert editor_client.get(jump, {"error": "next", "from": 1})["Location"].endswith("around=3#e3")
    assert editor_client.get(jump, {"error": "next", "from": 3})["Location"].endswith("around=5#e5")
    assert editor_client.get(jump, {"error": "prev", "from": 5})["Location"].endswith("around=3#e3")


def test_has_errors_finds_a_session_whose_only_error_is_a_failed_tool(editor_client, workspace, actor):
    for key, events in (("broken", failing()), ("fine", failing()[:1])):
        session = session_ensure(workspace=workspace, key=key, actor=actor)[0]
        event_append(thread=thread_ensure(session=session, actor=actor)[0], events=events, actor=actor)
    html = editor_client.get("/", {"errors": "on"}, **HTMX).content.decode()
    assert ">broken<" in html and ">fine<" not in html
    detail = editor_client.get(f"/sessions/{Session.objects.get(key='broken').pk}/").content.decode()
    assert '<span class="stat bad"><b>1</b> errors</span>' in detail
    assert '<td class="num" data-label="errors"><span class="err-count">1</span></td>' in detail
    assert Thread.objects.get(session__key="broken").error_count == 1
