"""What an LLMComplete event reports about its call: tokens and cost (pure; no database).

Counters (services/history.py) and the dashboard's call cards (selectors) read the same numbers.
"""

import math
from decimal import Decimal, InvalidOperation
from typing import Any


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
    """(input, output) tokens an LLMComplete reports; whole tokens, counted per event. Input is
    every token the request held, whatever the provider's convention: Anthropic's
    `input_tokens` leave out the cache's, which are added back (cache_usage)."""
    if event.type != "LLMComplete":
        return 0, 0
    cached = cache_usage(event.data)
    return (cached[2] if cached is not None else int(metric(event.data, "input_tokens", "prompt_tokens")),
            int(metric(event.data, "output_tokens", "completion_tokens")))


def event_cache_usage(event: Any) -> tuple[int, int, int] | None:
    """cache_usage() of an LLMComplete's data; None for any other event."""
    return cache_usage(event.data) if event.type == "LLMComplete" else None


def cache_usage(data: Any) -> tuple[int, int, int] | None:
    """(cache_read, cache_creation, every input token) a call's usage reports (its own keys, or
    a provider's `usage` object under "usage"), or None when it reports no cache tokens.
    Anthropic's `input_tokens` leave out what was read from or written to the cache
    (cache_read_input_tokens, cache_creation_input_tokens); OpenAI's prompt tokens include the
    `cached_tokens` read (prompt_tokens_details, flattened or not), as OpenTelemetry GenAI's
    input tokens include their `cache_read` and `cache_creation`."""
    if not isinstance(data, dict):
        return None
    nested = data.get("usage")
    usage: dict[str, Any] = nested if isinstance(nested, dict) else data
    details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
    anthropic = [k for k in ("cache_read_input_tokens", "cache_creation_input_tokens") if k in usage]
    if anthropic:
        read = int(metric(usage, "cache_read_input_tokens"))
        written = int(metric(usage, "cache_creation_input_tokens"))
        return read, written, int(metric(usage, "input_tokens")) + read + written
    if isinstance(details, dict) and "cached_tokens" in details or "cached_tokens" in usage:
        read = int(metric(details if isinstance(details, dict) else usage, "cached_tokens"))
        return read, 0, int(metric(usage, "prompt_tokens", "input_tokens"))
    if "cache_read" in usage or "cache_creation" in usage:  # OpenTelemetry GenAI's names
        read, written = int(metric(usage, "cache_read")), int(metric(usage, "cache_creation"))
        return read, written, max(int(metric(usage, "input_tokens", "prompt_tokens")), read + written)
    return None


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
