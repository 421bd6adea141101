"""A NUL character (U+0000) in agent text is shown on the dashboard as a marker, never dropped
and never in its stored form, with the text around it escaped as always."""

from contextstore.models import ContextBlock, Memory
from contextstore.services.blocks import block_upsert
from contextstore.services.events import event_append
from contextstore.services.state import state_write

MARKER = '<span class="nul" title="NUL character (U+0000)">␀</span>'
JSON_MARKER = '<span class="nul" title="NUL character (U+0000)">\\u0000</span>'


def page(client, thread) -> str:
    html = client.get(f"/threads/{thread.pk}/").content.decode()
    assert "\x00" not in html
    return html


def test_plain_text_shows_each_nul_as_a_marker_and_stays_escaped(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "ToolResult", "content": "out\x00<script>alert(1)</script> ␀ ␛ \x00end"}])
    html = page(editor_client, thread)
    assert f"out{MARKER}&lt;script&gt;alert(1)&lt;/script&gt; ␀ ␛ {MARKER}end" in html
    assert "␛␀" not in html and "<script>alert(1)" not in html


def test_markdown_shows_the_marker_in_text_and_a_plain_symbol_inside_attributes(editor_client, thread,
                                                                                  actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMOutput", "content": '**bold\x00** [a](https://x.org "t\x00\\"") `co\x00de`'}])
    html = page(editor_client, thread)
    rendered = html[html.index('class="content md'):html.index('class="content raw"')]
    assert f"<strong>bold{MARKER}</strong>" in rendered
    assert f"<code>co{MARKER}de</code>" in rendered
    assert 'title="t␀&quot;"' in rendered
    raw = html[html.index('class="content raw"'):]
    assert f"**bold{MARKER}**" in raw[:300]


def test_json_blocks_memories_summary_and_thinking_show_the_marker(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMOutput", "content": "answer",
         "parts": [{"type": "thinking", "thinking": "hm\x00m"}, {"type": "text", "text": "answer"}],
         "data": {"stdout": "a\x00b\\u0000", "k\x00": 1}}])
    block_upsert(thread=thread, name="notes", value="n\x00<b>", actor=actor)
    state_write(thread=thread, actor=actor, state={"s": "x"}, summary="sum\x00mary")
    Memory.objects.create(workspace=thread.workspace, user_id=thread.session.user_id,
                          content="mem\x00ory")
    html = page(editor_client, thread)
    assert f'"a{JSON_MARKER}b\\\\u0000"' in html  # the literal backslash stays a backslash
    assert f"k{MARKER}</button>" in html
    assert f"n{MARKER}&lt;b&gt;" in html
    assert f"sum{MARKER}mary" in html
    assert f"hm{MARKER}m" in html
    assert f"mem{MARKER}ory" in html


def test_a_block_holding_a_nul_keeps_its_text_when_its_placement_is_edited(editor_client, thread, actor):
    block_upsert(thread=thread, name="notes", value="n\x00b", actor=actor)
    html = page(editor_client, thread)
    assert 'aria-label="Value of notes"' not in html and "which a browser cannot edit" in html
    answer = editor_client.post(f"/threads/{thread.pk}/blocks/", {
        "name": "notes", "placement": "prefix", "order": "4"}, HTTP_HX_REQUEST="true")
    assert answer.status_code == 200
    block = ContextBlock.objects.get(thread=thread)
    assert (block.value, block.placement, block.order) == ("n\x00b", "prefix", 4)
