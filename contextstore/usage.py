"""What an LLMComplete event reports about its call: tokens and cost (pure; no database).

Counters (services/history.py), the dashboard's call cards and runs (selectors), the replay,
the cache analysis and the trends (whose SQL reads the same keys, USAGE_KEYS) read the same
numbers: read_usage() turns a call's usage, in whichever provider's shape it was logged, into
one Usage.
"""

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

# Where a call's data holds its usage: its own keys, or a provider's usage object under one of
# these (OpenAI and Anthropic: `usage`; Gemini: `usageMetadata`, the Python SDK's
# `usage_metadata`). A key is looked for in each, in this order, before the next key.
USAGE_OBJECTS = ("usage", "usageMetadata", "usage_metadata")

# Each number of a Usage and the keys that report it, first found wins. OpenAI Chat
# Completions, OpenAI Responses, Anthropic, Gemini (REST camelCase and the Python SDK's
# snake_case), OpenTelemetry GenAI (the attribute names, current and older, and the names the
# span mapping stores: cache_read_tokens, ...).
USAGE_KEYS: dict[str, tuple[str, ...]] = {
    "input": ("input_tokens", "prompt_tokens", "promptTokenCount", "prompt_token_count",
              "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    "output": ("output_tokens", "completion_tokens", "gen_ai.usage.output_tokens",
               "gen_ai.usage.completion_tokens"),
    # Gemini's output: the answer's tokens plus the thinking's (thoughtsTokenCount), which
    # OpenAI and Anthropic count inside their output tokens
    "candidates": ("candidatesTokenCount", "candidates_token_count"),
    "thoughts": ("thoughtsTokenCount", "thoughts_token_count"),
    # Anthropic: input_tokens leave these out
    "anthropic_read": ("cache_read_input_tokens",),
    "anthropic_write": ("cache_creation_input_tokens",),
    # OpenAI (prompt_tokens_details / input_tokens_details, or flattened) and Gemini: inside input
    "included_read": ("cached_tokens", "cachedContentTokenCount", "cached_content_token_count"),
    # OpenTelemetry GenAI: inside input
    "genai_read": ("cache_read", "cache_read_tokens", "gen_ai.usage.cache_read.input_tokens",
                   "gen_ai.usage.cache_read_input_tokens"),
    "genai_write": ("cache_creation", "cache_creation_tokens", "gen_ai.usage.cache_creation.input_tokens",
                    "gen_ai.usage.cache_creation_input_tokens"),
    # OpenAI's details: what the request wrote to the cache, inside its prompt tokens
    "included_write": ("cache_write_tokens",),
    "reasoning": ("reasoning_tokens", "gen_ai.usage.reasoning_tokens",
                  "gen_ai.usage.reasoning.output_tokens"),
}
# The details objects OpenAI nests cached and reasoning tokens in (Chat Completions, Responses).
INPUT_DETAILS = ("prompt_tokens_details", "input_tokens_details")
OUTPUT_DETAILS = ("completion_tokens_details", "output_tokens_details")


@dataclass(frozen=True)
class Usage:
    """A call's tokens in one convention: `input` is every token the request held (cache reads
    and writes included, whatever the provider counts in its own input number); `output` every
    token the model produced (reasoning included); `reports_cache` whether the usage said
    anything about the prompt cache (a hit rate needs it)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    reports_cache: bool = False

    def as_dict(self) -> dict[str, int]:
        """The names the API and call_cost() use."""
        return {"input_tokens": self.input, "output_tokens": self.output,
                "cache_read_tokens": self.cache_read, "cache_creation_tokens": self.cache_write,
                "reasoning_tokens": self.reasoning}


def _number(value: Any) -> Decimal | None:
    if not isinstance(value, int | float | str) or isinstance(value, bool):
        return None
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _count(value: Any) -> Decimal | None:
    """A token count: a JSON number (a string is not one, as trends' SQL reads it too)."""
    return _number(value) if isinstance(value, int | float) else None


def _places(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [data] + [v for k in USAGE_OBJECTS if isinstance(v := data.get(k), dict)]


def _first(places: list[dict[str, Any]], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        for place in places:
            number = _count(place.get(key))
            if number is not None and number >= 0:  # a negative count is malformed: not read
                return int(number)
    return None


def read_usage(data: Any) -> Usage | None:
    """The Usage a call's data reports, in any provider's shape (see USAGE_KEYS); None when it
    reports no token count at all. Which convention the cache tokens follow decides what input
    is: Anthropic's cache reads and writes are added to its input_tokens; OpenAI's and Gemini's
    cached tokens are inside their prompt tokens; OpenTelemetry GenAI's input holds its cache
    reads and writes (taken as at least their sum)."""
    if not isinstance(data, dict):
        return None
    places = _places(data)
    said = {name: _first(places, keys) for name, keys in USAGE_KEYS.items()}
    for details, name in ((INPUT_DETAILS, "included_read"), (INPUT_DETAILS, "included_write"),
                          (OUTPUT_DETAILS, "reasoning")):
        nested = [d for place in places for k in details if isinstance(d := place.get(k), dict)]
        found = _first(nested, USAGE_KEYS[name]) if nested else None
        said[name] = found if found is not None else said[name]
    if all(v is None for v in said.values()):
        return None
    inp, (a_read, a_write) = said["input"] or 0, (said["anthropic_read"], said["anthropic_write"])
    g_read, g_write = said["genai_read"], said["genai_write"]
    if a_read is not None or a_write is not None:
        read, write, total = a_read or 0, a_write or 0, inp + (a_read or 0) + (a_write or 0)
    elif said["included_read"] is not None:
        read, write, total = said["included_read"], said["included_write"] or 0, inp
    elif g_read is not None or g_write is not None:
        read, write = g_read or 0, g_write or 0
        total = max(inp, read + write)
    else:
        read, write, total = 0, 0, inp
    output = said["output"]
    if output is None and (said["candidates"] is not None or said["thoughts"] is not None):
        output = (said["candidates"] or 0) + (said["thoughts"] or 0)
    cache = any(said[k] is not None for k in ("anthropic_read", "anthropic_write", "included_read",
                                                "genai_read", "genai_write"))
    return Usage(input=total, output=output or 0, cache_read=read, cache_write=write,
                 reasoning=said["reasoning"] or 0, reports_cache=cache)


def metric(data: Any, *keys: str) -> Decimal:
    """A number an event reports in its data (cost, token usage); 0 when absent or malformed."""
    if not isinstance(data, dict):
        return Decimal(0)
    for key in keys:
        value = data.get(key)
        if isinstance(value, int | float | str) and not isinstance(value, bool):
            try:
                number = Decimal(str(value))
            except InvalidOperation:
                return Decimal(0)
            return number if number.is_finite() else Decimal(0)
    return Decimal(0)


def event_cost(event: Any) -> Decimal:
    return metric(event.data, "cost") if event.type == "LLMComplete" else Decimal(0)


def event_usage(event: Any) -> tuple[int, int]:
    """(input, output) tokens an LLMComplete reports (read_usage); (0, 0) for any other event."""
    usage = read_usage(event.data) if event.type == "LLMComplete" else None
    return (usage.input, usage.output) if usage is not None else (0, 0)


def event_cache_usage(event: Any) -> tuple[int, int, int] | None:
    """cache_usage() of an LLMComplete's data; None for any other event."""
    return cache_usage(event.data) if event.type == "LLMComplete" else None


def cache_usage(data: Any) -> tuple[int, int, int] | None:
    """(cache_read, cache_write, every input token) a call's usage reports (read_usage), or
    None when it says nothing about the prompt cache."""
    usage = read_usage(data)
    if usage is None or not usage.reports_cache:
        return None
    return usage.cache_read, usage.cache_write, usage.input


SMALLEST_COST = 0.000001  # a millionth of a dollar: below it a cost shows as "<$0.000001"


def cost_text(value: Decimal | float | None) -> str:
    """A cost in US dollars as every page shows it: cents from $0.01 up ("$12.50", grouped
    "$1,234.00"); below a cent two significant digits ("$0.0042", "$0.00042"), since one call
    of a cheap model costs a fraction of a cent and "$0.00" would hide it; "<$0.000001" below
    that; "—" when unknown (None, NaN)."""
    try:
        n = float(value) if value is not None else math.nan
    except (TypeError, ValueError):
        return "—"
    if not math.isfinite(n):
        return "—"
    if n < 0:
        return "-" + cost_text(-n)
    if n == 0:
        return "$0.00"
    if n < SMALLEST_COST:
        return f"<${SMALLEST_COST:.6f}"
    if n < 0.01:
        digits = 1 - math.floor(math.log10(n))  # two significant digits
        text = f"{n:.{digits}f}".rstrip("0")
        if float(text) < 0.01:  # 0.00999 rounds up to a cent: shown as one below
            return f"${text}"
    if n >= 1e15:  # beyond what a float holds to the cent
        return f"${n:.3g}"
    return f"${n:,.2f}"
