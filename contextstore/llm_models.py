"""Known models' context windows and input prices, and the budget a thread's renders default to.

The table is the one place to add a model. A name matches its longest listed prefix, so dated
versions ("gpt-4o-2024-08-06") use their family's window. A thread's settings fall back to its
session's, then its workspace's. With no context window from any of them (an unknown model and
nothing set), renders use settings.CONTEXTSTORE["DEFAULT_RENDER_MAX_TOKENS"] (8000), as before.
"""

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings

from contextstore.models import Thread

CONTEXT_WINDOWS = {
    "gpt-4.1": 1_047_576, "gpt-4.1-mini": 1_047_576, "gpt-4.1-nano": 1_047_576,
    "gpt-4o": 128_000, "gpt-4o-mini": 128_000, "gpt-4-turbo": 128_000, "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385, "gpt-5": 400_000, "gpt-5-mini": 400_000, "gpt-5-nano": 400_000,
    "o1": 200_000, "o3": 200_000, "o3-mini": 200_000, "o4-mini": 200_000,
    "claude-3-5-sonnet": 200_000, "claude-3-5-haiku": 200_000, "claude-3-7-sonnet": 200_000,
    "claude-3-opus": 200_000, "claude-3-haiku": 200_000, "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000, "claude-haiku-4": 200_000,
    "gemini-1.5-pro": 2_097_152, "gemini-1.5-flash": 1_048_576, "gemini-2.0-flash": 1_048_576,
    "gemini-2.5-pro": 1_048_576, "gemini-2.5-flash": 1_048_576,
    "llama-3.1-8b": 131_072, "llama-3.1-70b": 131_072, "mistral-large": 131_072,
}
# Approximate list prices, USD per million tokens, as the providers' price pages gave them in
# mid-2025 (written down from memory, not a billing source): (input, what a token read from the
# prompt cache costs as a share of input, output). Gemini's are the prices of prompts up to
# 200k tokens. They value the input a cache break made an agent pay in full (selectors/cache.py)
# and price the LLM calls that arrive without a cost (OpenTelemetry ingest); a model missing here
# is valued at nothing and its calls get no cost.
PRICES = {
    "gpt-4o": (2.50, 0.5, 10.00), "gpt-4o-mini": (0.15, 0.5, 0.60), "gpt-4.1": (2.00, 0.25, 8.00),
    "gpt-4.1-mini": (0.40, 0.25, 1.60), "gpt-4.1-nano": (0.10, 0.25, 0.40), "gpt-5": (1.25, 0.1, 10.00),
    "gpt-5-mini": (0.25, 0.1, 2.00), "gpt-5-nano": (0.05, 0.1, 0.40), "o1": (15.00, 0.5, 60.00),
    "o3": (2.00, 0.25, 8.00), "o3-mini": (1.10, 0.5, 4.40), "o4-mini": (1.10, 0.25, 4.40),
    "claude-3-5-sonnet": (3.00, 0.1, 15.00), "claude-3-7-sonnet": (3.00, 0.1, 15.00),
    "claude-sonnet-4": (3.00, 0.1, 15.00), "claude-3-opus": (15.00, 0.1, 75.00),
    "claude-opus-4": (15.00, 0.1, 75.00), "claude-opus-4-5": (5.00, 0.1, 25.00),
    "claude-3-haiku": (0.25, 0.1, 1.25), "claude-3-5-haiku": (0.80, 0.1, 4.00),
    "claude-haiku-4": (1.00, 0.1, 5.00),
    "gemini-2.5-pro": (1.25, 0.25, 10.00), "gemini-2.5-flash": (0.30, 0.25, 2.50),
    "gemini-2.5-flash-lite": (0.10, 0.25, 0.40), "gemini-2.0-flash": (0.10, 0.25, 0.40),
}
# Tokens kept free for the answer when a window is known and no reserve_output is set.
DEFAULT_RESERVE_OUTPUT = 4096


def _listed(table: dict[str, Any], model: str) -> Any:
    name = model.strip().lower()
    best = max((k for k in table if name == k or name.startswith(k + "-")), key=len, default=None)
    return table[best] if best else None


def known_window(model: str) -> int | None:
    return _listed(CONTEXT_WINDOWS, model)


def cache_saving_per_token(model: str) -> Decimal:
    """What a token read from the prompt cache saves against paying it in full (USD); 0 for a
    model without a listed price."""
    price = _listed(PRICES, model)
    if price is None:
        return Decimal(0)
    per_million, cached_share, _ = price
    return Decimal(str(per_million)) * (1 - Decimal(str(cached_share))) / 1_000_000


def call_cost(model: str, usage: dict[str, int]) -> Decimal | None:
    """What an LLM call cost at list price (USD), from its usage: the input tokens (of which
    `cache_read_tokens` at the cached share, counted inside `input_tokens` as OpenAI and the
    GenAI conventions count them) and the output tokens. None for a model not listed or a call
    without token counts: unknown, not free."""
    price = _listed(PRICES, model) if model else None
    if price is None or ("input_tokens" not in usage and "output_tokens" not in usage):
        return None
    per_million, cached_share, output = (Decimal(str(p)) for p in price)
    cached = min(usage.get("cache_read_tokens", 0), usage.get("input_tokens", 0))
    fresh = usage.get("input_tokens", 0) - cached
    total = (fresh + cached * cached_share) * per_million + usage.get("output_tokens", 0) * output
    return total / 1_000_000


@dataclass(frozen=True)
class ModelSettings:
    model: str
    context_window: int | None
    reserve_output: int
    budget: int  # default render budget: context_window - reserve_output
    source: str  # where the window came from: thread, session, workspace, table or default


def thread_model_settings(thread: Thread) -> ModelSettings:
    """The thread's model settings after inheritance (thread → session → workspace → table)."""
    levels = [("thread", thread), ("session", thread.session), ("workspace", thread.workspace)]
    model = next((o.model for _, o in levels if o.model), "")
    window, source = next(((o.context_window, name) for name, o in levels if o.context_window),
                          (None, ""))
    if window is None and model:
        window, source = known_window(model), "table"
    reserve = next((o.reserve_output for _, o in levels if o.reserve_output is not None), None)
    if window is None:
        default = settings.CONTEXTSTORE["DEFAULT_RENDER_MAX_TOKENS"]
        return ModelSettings(model, None, reserve or 0, default, "default")
    if reserve is None:
        reserve = min(DEFAULT_RESERVE_OUTPUT, window // 4)
    return ModelSettings(model, window, reserve, max(window - reserve, 1), source)
