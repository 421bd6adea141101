"""What an LLMComplete event reports about its call: tokens and cost (pure; no database).

Counters (services/history.py) and the dashboard's call cards (selectors) read the same numbers.
"""

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
    """(input, output) tokens an LLMComplete reports; whole tokens, counted per event."""
    if event.type != "LLMComplete":
        return 0, 0
    return (int(metric(event.data, "input_tokens", "prompt_tokens")),
            int(metric(event.data, "output_tokens", "completion_tokens")))
