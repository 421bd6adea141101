"""Agent Markdown as safe HTML for the dashboard reader.

markdown-it-py renders CommonMark + tables with raw HTML off (an agent's `<script>` stays
text), then nh3 (ammonia) keeps only the tags below, so even a renderer bug cannot put markup
or a `javascript:` link on the page. No style attributes: the CSP forbids them anyway.
"""

import re

import nh3
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])

TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote",
        "pre", "code", "em", "strong", "del", "a", "table", "thead", "tbody", "tr", "th", "td"}
ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "code": {"class"}}
SCHEMES = {"http", "https", "mailto"}
# Text with none of these is shown as plain text (no Markdown work, no raw toggle).
_MARKUP = re.compile(r"(^|\n)\s{0,3}(#{1,6}\s|[-*+]\s|\d+[.)]\s|>|```|~~~|\|)|[*_`\[]")


def looks_like_markdown(text: str) -> bool:
    return bool(_MARKUP.search(text or ""))


# An agent's heading ("# Plan") inside an event: the page's outline is the page's (one h1, the
# thread's name; h2 and h3 for its panels), so it is bold text of its own line, not a heading
# element, and neither breaks the outline nor axe's heading-order under the cards.
_HEADING = re.compile(r"<(/?)h([1-6])>")


def _heading_as_text(match: re.Match[str]) -> str:
    return "</strong></p>" if match.group(1) else f'<p class="md-h md-h{match.group(2)}"><strong>'


def render_markdown(text: str) -> str:
    """Sanitized HTML; each code block wrapped with a copy button (behaviour in app.js), each
    heading bold text (_HEADING)."""
    html = nh3.clean(_md.render(text or ""), tags=TAGS, attributes=ATTRIBUTES, url_schemes=SCHEMES,
                     link_rel="noopener noreferrer nofollow", strip_comments=True)
    # nh3's output escapes any "<pre>" or "<h1>" that was text, so these are the real ones.
    return _HEADING.sub(_heading_as_text, html.replace(
        "<pre>", '<div class="code"><button type="button" class="btn small copy" '
                 'data-copy-code>Copy</button><pre>').replace("</pre>", "</pre></div>"))
