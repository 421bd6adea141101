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


def render_markdown(text: str) -> str:
    """Sanitized HTML; each code block wrapped with a copy button (behaviour in app.js)."""
    html = nh3.clean(_md.render(text or ""), tags=TAGS, attributes=ATTRIBUTES, url_schemes=SCHEMES,
                     link_rel="noopener noreferrer nofollow", strip_comments=True)
    # nh3's output escapes any "<pre>" that was text, so these are the real code blocks.
    return (html.replace("<pre>", '<div class="code"><button type="button" class="btn small copy" '
                                  'data-copy-code>Copy</button><pre>')
                .replace("</pre>", "</pre></div>"))
