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
# List prices of input tokens (USD per million) and what a token read from the prompt cache costs
# as a share of that, from the providers' price pages (2025). They value the input a cache break
# made an agent pay in full (selectors/cache.py); a model missing here is valued at nothing.
INPUT_PRICES = {
    "gpt-4o": (2.50, 0.5), "gpt-4o-mini": (0.15, 0.5), "gpt-4.1": (2.00, 0.25),
    "gpt-4.1-mini": (0.40, 0.25), "gpt-4.1-nano": (0.10, 0.25), "gpt-5": (1.25, 0.1),
    "gpt-5-mini": (0.25, 0.1), "gpt-5-nano": (0.05, 0.1), "o1": (15.00, 0.5), "o3": (2.00, 0.25),
    "o3-mini": (1.10, 0.5), "o4-mini": (1.10, 0.25),
    "claude-3-5-sonnet": (3.00, 0.1), "claude-3-7-sonnet": (3.00, 0.1), "claude-sonnet-4": (3.00, 0.1),
    "claude-3-opus": (15.00, 0.1), "claude-opus-4": (15.00, 0.1), "claude-opus-4-5": (5.00, 0.1),
    "claude-3-haiku": (0.25, 0.1), "claude-3-5-haiku": (0.80, 0.1), "claude-haiku-4": (1.00, 0.1),
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
    price = _listed(INPUT_PRICES, model)
    if price is None:
        return Decimal(0)
    per_million, cached_share = price
    return Decimal(str(per_million)) * (1 - Decimal(str(cached_share))) / 1_000_000


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
