"""Prompt-cache reuse between two model requests, as the provider receives them (pure).

A provider's prompt cache keeps the longest prefix of a request it has seen before: tools,
then system, then messages, serialized in that order. So what one request can reuse of the
one before is the token-counted longest common prefix of the two serialized requests, and it
counts only from the provider's minimum cacheable prefix up. Tokens are cl100k_base
(contextstore.tokens), which approximates each provider's own tokenizer; each tool, system
block and message is counted on its own, as providers frame them.
"""

import difflib
import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contextstore.tokens import encoding


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

    @property
    def tokens(self) -> int:
        return len(_encode(self.text))


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
        reusable += n
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
DIFF_CONTEXT = 12  # unchanged words kept on either side of a change
DIFF_MAX_WORDS = 4000  # words of each side compared; longer texts are cut there


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """(op, text) runs, op one of "same", "del", "add", "gap" (unchanged words left out)."""
    a, b = _WORDS.findall(before), _WORDS.findall(after)
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
    out.append(("same", "".join(a[max(head - DIFF_CONTEXT, 0):head])))
    cut = len(mid_a) > DIFF_MAX_WORDS or len(mid_b) > DIFF_MAX_WORDS
    matcher = difflib.SequenceMatcher(None, mid_a[:DIFF_MAX_WORDS], mid_b[:DIFF_MAX_WORDS], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append(("same", "".join(mid_a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("del", "".join(mid_a[i1:i2])))
        if j2 > j1:
            out.append(("add", "".join(mid_b[j1:j2])))
    if cut:
        out.append(("gap", "the rest of a long change"))
    out.append(("same", "".join(b[len(b) - tail:len(b) - tail + DIFF_CONTEXT] if tail else [])))
    if tail > DIFF_CONTEXT:
        out.append(("gap", f"{tail - DIFF_CONTEXT} words"))
    return [(op, text) for op, text in out if text]


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
