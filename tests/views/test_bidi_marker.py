"""A bidirectional control (U+202E RIGHT-TO-LEFT OVERRIDE and its kin) in agent text is shown
on the dashboard as a marker, as a NUL is: never raw, where it would reorder the text around it
("\u202egpj.exe" reads "exe.jpg"), with the text around it escaped as always."""

from contextstore.services.events import event_append

RLO = '<span class="nul" title="RIGHT-TO-LEFT OVERRIDE (U+202E)">RLO</span>'
JSON_RLO = '<span class="nul" title="RIGHT-TO-LEFT OVERRIDE (U+202E)">\\u202e</span>'
CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def page(client, thread) -> str:
    html = client.get(f"/threads/{thread.pk}/").content.decode()
    assert not any(c in html for c in CONTROLS)
    return html


def test_plain_text_shows_each_bidi_control_as_a_marker(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "ToolResult", "content": "saved invoice_\u202egpj.exe <b>" + CONTROLS}])
    html = page(editor_client, thread)
    assert f"saved invoice_{RLO}gpj.exe &lt;b&gt;" in html
    for name in ("ALM", "LRM", "RLM", "LRE", "RLE", "PDF", "LRO", "RLO", "LRI", "RLI", "FSI", "PDI"):
        assert f">{name}</span>" in html


def test_markdown_marks_text_and_names_the_control_inside_attributes(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMOutput", "content": '**a\u202eb** [l\u2067ink](https://x.org "t\u202e")'}])
    html = page(editor_client, thread)
    rendered = html[html.index('class="content md'):html.index('class="content raw"')]
    assert f"<strong>a{RLO}b</strong>" in rendered
    assert 'title="tRLO"' in rendered
    assert ">RLI</span>ink</a>" in rendered


def test_json_shows_the_control_as_its_escape(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "ToolCall", "content": "call", "data": {"file": "x\u202eb", "k\u202e": 1}}])
    html = page(editor_client, thread)
    assert f'"x{JSON_RLO}b"' in html
    assert f"k{RLO}</button>" in html
