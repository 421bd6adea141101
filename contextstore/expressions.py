"""The block expression engine: a small, safe subset of Django's template language that a Nooa
context block's `expr` is written in, evaluated on every render against the thread's document.
Reads only; used by the renderer (selectors), the block services and the admin preview."""

import copy

from django.conf import settings
from django.template import (
    Context,
    Engine,
    Library,
    TemplateSyntaxError,
    defaultfilters,
    defaulttags,
)

from contextstore.errors import InvalidInput
from contextstore.models import ContextBlock, Thread

# A template language for expressions: variables, a short list of filters, if/with/firstof,
# and nothing else. No loops and no padding filters, so the work and the output of an
# expression stay proportional to its text and the state it reads (an expression runs on every
# render); nothing reaches outside the data it is given (no include, load, extends or debug).
SAFE_FILTERS = (
    "default", "default_if_none", "upper", "lower", "title", "capfirst", "join", "length",
    "first", "last", "truncatechars", "truncatewords", "yesno", "floatformat", "pluralize",
    "add", "cut", "wordcount",
)
register = Library()  # this module is the only template library SafeEngine loads
for _name, _tag in (("if", defaulttags.do_if), ("with", defaulttags.do_with),
                    ("firstof", defaulttags.firstof)):
    register.tag(_name, _tag)
for _name in SAFE_FILTERS:
    register.filter(_name, defaultfilters.register.filters[_name])


class SafeEngine(Engine):
    default_builtins = ["contextstore.expressions"]


ENGINE = SafeEngine(loaders=[], autoescape=False, libraries={}, string_if_invalid="")


def compile_expr(expr: str):
    try:
        return ENGINE.from_string(expr)
    except TemplateSyntaxError as exc:
        raise InvalidInput(f"The expression does not compile: {exc}", details={"expr": str(exc)}) from exc


def evaluate_expr(expr: str, thread: Thread) -> str | None:
    """Render a block expression against a copy of the thread's durable state."""
    data = {
        "state": copy.deepcopy(thread.state),
        "memory": copy.deepcopy(thread.memory),
        "iteration": thread.iteration,
        "summary": thread.summary,
        "thread": {"name": thread.name, "revision": thread.revision, "events": thread.event_count},
    }
    try:
        text = compile_expr(expr).render(Context(data, autoescape=False))
    except InvalidInput:
        raise
    except Exception as exc:  # an expression must never break a render
        return f"[expression error: {type(exc).__name__}]"
    text = text.strip()
    return text[: settings.CONTEXTSTORE["BLOCK_MAX_CHARS"]] or None


def block_text(block: ContextBlock, thread: Thread) -> str | None:
    """What a block contributes to the prompt now; None when suppressed."""
    if block.expr is not None:
        return evaluate_expr(block.expr, thread)
    return block.value
