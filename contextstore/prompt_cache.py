"""Prompt-cache reuse between two model requests, as the provider receives them (pure).

A provider's prompt cache keeps the longest prefix of a request it has seen before: tools,
then system, then messages, serialized in that order. So what one request can reuse of the
one before is the longest common prefix of the two serialized requests, and it counts only
from the provider's minimum cacheable prefix up.

Tokens are counted as everywhere else (contextstore.tokens.request_tokens): cl100k_base, which
approximates each provider's own tokenizer; each tool (its JSON), system block and message (the
text the model reads) on its own, framed. A render's segments carry the counts the render made
(from its events' stored counts), so the analysis of a request and its render say one number.
Where two segments first differ, the share of the later one that repeats the earlier is taken
from their serialized forms' common token prefix.
"""

import difflib
import functools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contextstore.tokens import count_tokens, encoding, framed, tool_tokens


@dataclass(frozen=True)
class Provider:
    name: str
    min_prefix: int  # the shortest prefix the provider caches, in tokens
    ttl_seconds: int  # how long an unused cache entry lives by default
    note: str
    min_by_model: dict[str, int] = field(default_factory=dict)  # model-name prefix: its minimum


# The one table of providers' prompt caches (their published documentation, 2025):
# - Anthropic caches tools, system and messages up to a `cache_control` breakpoint; the minimum
#   cacheable prompt is 1024 tokens (2048 for the Claude 3 and 3.5 Haiku models); an entry lives
#   5 minutes from its last use unless a 1-hour TTL is asked for.
# - OpenAI caches every prompt of 1024 tokens or more automatically, from its start, in 128-token
#   steps; an entry lives 5 to 10 minutes idle (up to an hour off-peak).
PROVIDERS = {
    "anthropic": Provider(
        "Anthropic", 1024, 300,
        "caches up to a cache_control breakpoint; tools, then system, then messages",
        {"claude-3-haiku": 2048, "claude-3-5-haiku": 2048}),
    "openai": Provider(
        "OpenAI", 1024, 300,
        "caches every prompt of 1024 tokens or more from its start, automatically"),
}


def provider_of(fmt: str | None, model: str) -> str:
    """The provider a request went to: its wire format says, else the model's name."""
    if fmt in PROVIDERS:
        return str(fmt)
    return "anthropic" if model.strip().lower().startswith("claude") else "openai"


def min_prefix(provider: str, model: str) -> int:
    spec = PROVIDERS[provider]
    name = model.strip().lower()
    best = max((k for k in spec.min_by_model if name == k or name.startswith(k + "-")),
               key=len, default=None)
    return spec.min_by_model[best] if best else spec.min_prefix


# ------------------------------------------------------------------ the serialized request

@dataclass(frozen=True)
class Segment:
    """One framed piece of a request: a tool, a system block or a message."""

    part: str  # tools, system or messages: where it sits in the request
    section: str  # what made it: tools, prefix, summary, suffix, history, system
    label: str  # for people: "system block 2 (suffix blocks)", "message 14 (user)"
    text: str  # its canonical JSON
    plain: str  # the words it carries, for a word diff
    count: int | None = None  # its tokens as the render that made it counted them, if one did

    @property
    def tokens(self) -> int:
        """Its part of tokens.request_tokens: what its maker counted, else a tool's definition,
        or the text it carries, framed."""
        if self.count is not None:
            return self.count
        if self.part == "tools":
            return tool_tokens(json.loads(self.text))
        return framed(count_tokens(self.plain))


def canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@functools.lru_cache(maxsize=8192)
def _encode(text: str) -> tuple[int, ...]:
    # consecutive calls share most of their segments: each is encoded once
    return tuple(encoding().encode_ordinary(text))


@dataclass(frozen=True)
class Reuse:
    reusable: int  # tokens of `after` that repeat the start of `before`
    total: int  # tokens of `after`
    before_total: int  # tokens of `before`
    index: int | None  # the first segment that differs; None when they are the same
    before: Segment | None  # the segments at `index` (None: that request ended before it)
    after: Segment | None

    @property
    def appended(self) -> bool:
        """`after` is `before` and more: nothing of `before` was lost."""
        return self.before is None


def reuse(before: Sequence[Segment], after: Sequence[Segment]) -> Reuse:
    """How much of `after` a cache filled by `before` holds: whole segments while they are the
    same, then the tokens the first differing pair starts with."""
    reusable, index = 0, None
    for i, (x, y) in enumerate(zip(before, after, strict=False)):
        if x.text == y.text:
            reusable += y.tokens
            continue
        index = i
        a, b = _encode(x.text), _encode(y.text)
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        reusable += y.tokens * n // len(b) if b else 0  # the share of it that repeats
        break
    if index is None and len(before) != len(after):
        index = min(len(before), len(after))
    return Reuse(
        reusable=reusable, total=sum(s.tokens for s in after),
        before_total=sum(s.tokens for s in before), index=index,
        before=before[index] if index is not None and index < len(before) else None,
        after=after[index] if index is not None and index < len(after) else None)


# ------------------------------------------------------------------ word diff

_WORDS = re.compile(r"\s+|\w+|[^\w\s]")
# A word diff's tokens: a word or a punctuation mark with the whitespace after it (half the
# tokens of splitting the spaces off, and no token as common as a space to slow the matcher).
_DIFF_WORDS = re.compile(r"\w+\s*|[^\w\s]\s*|\s+")
DIFF_CONTEXT = 12  # unchanged words kept on either side of a change
DIFF_MAX_WORDS = 4000  # words of each side compared; longer texts are cut there
# SequenceMatcher's work grows with the product of the two sides' words on texts of few distinct
# words (a log, a table): past this product, both sides are cut to its square root.
DIFF_MAX_WORK = 1_000_000
DIFF_MAX_RUN = 2000  # characters shown of one run of changed (or kept) text


def _run(op: str, text: str) -> list[tuple[str, str]]:
    if len(text) <= DIFF_MAX_RUN:
        return [(op, text)]
    return [(op, text[:DIFF_MAX_RUN]), ("gap", f"{len(text) - DIFF_MAX_RUN:,} more characters")]


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """(op, text) runs, op one of "same", "del", "add", "gap" (unchanged words left out, and
    what is past the work and length caps, said in words)."""
    a, b = _DIFF_WORDS.findall(before), _DIFF_WORDS.findall(after)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    mid_a, mid_b = a[head:len(a) - tail], b[head:len(b) - tail]
    out: list[tuple[str, str]] = []
    if head > DIFF_CONTEXT:
        out.append(("gap", f"{head - DIFF_CONTEXT} words"))
    out.extend(_run("same", "".join(a[max(head - DIFF_CONTEXT, 0):head])))
    limit = DIFF_MAX_WORDS
    if min(len(mid_a), limit) * min(len(mid_b), limit) > DIFF_MAX_WORK:
        shorter = max(min(len(mid_a), len(mid_b)), 1)
        limit = min(limit, max(math.isqrt(DIFF_MAX_WORK), DIFF_MAX_WORK // shorter))
    cut = len(mid_a) > limit or len(mid_b) > limit
    matcher = difflib.SequenceMatcher(None, mid_a[:limit], mid_b[:limit], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.extend(_run("same", "".join(mid_a[i1:i2])))
            continue
        old, new = "".join(mid_a[i1:i2]), "".join(mid_b[j1:j2])
        space = ""  # a replaced word's space is shared by both sides: shown as kept
        if op == "replace" and old.rstrip() != old and new.endswith(old[len(old.rstrip()):]):
            space = old[len(old.rstrip()):]
            old, new = old[:-len(space)], new[:-len(space)]
        out.extend(_run("del", old) + _run("add", new) + [("same", space)])
    if cut:
        out.append(("gap", "the rest of a long change"))
    out.extend(_run("same", "".join(b[len(b) - tail:len(b) - tail + DIFF_CONTEXT] if tail else [])))
    if tail > DIFF_CONTEXT:
        out.append(("gap", f"{tail - DIFF_CONTEXT} words"))
    merged: list[tuple[str, str]] = []
    for kind, text in out:
        if merged and kind == merged[-1][0] and kind != "gap":
            merged[-1] = (kind, merged[-1][1] + text)
        elif text:
            merged.append((kind, text))
    return merged


_TIME_WORD = re.compile(
    r"^(\d+|[-:/.,+TZ]|am|pm|utc|gmt|z|mon|tue|wed|thu|fri|sat|sun|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday|jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|"
    r"january|february|march|april|june|july|august|september|october|november|december)$",
    re.IGNORECASE)
_TIME_SHAPE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}|\b\d{10,13}\b|\d{1,2}/\d{1,2}/\d{2,4}")


def timestamp_like(before: str, after: str) -> bool:
    """Whether the only words that changed are parts of a date or a time (a clock in a system
    prompt changes it on every call)."""
    diff = word_diff(before, after)
    changed = [text for op, text in diff if op in ("del", "add")]
    if not changed:
        return False
    words = [w for text in changed for w in _WORDS.findall(text) if not w.isspace()]
    return all(_TIME_WORD.match(w) for w in words) and bool(_TIME_SHAPE.search(after))


# ------------------------------------------------------------------ what the provider said

@dataclass(frozen=True)
class Reported:
    """Cache tokens a provider reported for one call, and the input they are a share of."""

    cache_read: int
    cache_creation: int
    input_total: int  # every input token: uncached, read from cache and written to it

    @property
    def share(self) -> float:
        return self.cache_read / self.input_total if self.input_total else 0.0


AGREEMENT_MARGIN = 0.25  # shares further apart than this disagree (tokenizers differ a little)


def disagreement(*, reusable: int, total: int, minimum: int, reported: Reported,
                 gap_seconds: float | None, ttl_seconds: int) -> str | None:
    """Why the provider's numbers and the prediction disagree, or None when they agree. Shares
    are compared, not token counts: the provider counts with its own tokenizer."""
    predicted = reusable if reusable >= minimum else 0
    if predicted and not reported.cache_read:
        if gap_seconds is not None and gap_seconds > ttl_seconds:
            return (f"the provider read nothing from its cache, though {predicted} tokens repeat the "
                    f"previous call: {round(gap_seconds / 60)} min passed, longer than the cache's "
                    f"{ttl_seconds // 60}-minute lifetime")
        return (f"the provider read nothing from its cache, though {predicted} tokens repeat the "
                "previous call (no cache breakpoint in the request, or the entry was evicted)")
    if reported.cache_read and not predicted:
        return (f"the provider read {reported.cache_read} tokens from its cache, though the request "
                "shares too little with the previous call: the cache held an earlier request")
    share = predicted / total if total else 0.0
    if predicted and abs(share - reported.share) > AGREEMENT_MARGIN:
        return (f"the provider read {round(100 * reported.share)}% of the input from its cache; "
                f"{round(100 * share)}% was predicted (a cache breakpoint earlier than the change, "
                "or the cache held another request)")
    return None
