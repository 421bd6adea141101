"""Known models' context windows, and the budget a thread's renders default to.

The table is the one place to add a model. A name matches its longest listed prefix, so dated
versions ("gpt-4o-2024-08-06") use their family's window. A thread's settings fall back to its
session's, then its workspace's. With no context window from any of them (an unknown model and
nothing set), renders use settings.CONTEXTSTORE["DEFAULT_RENDER_MAX_TOKENS"] (8000), as before.
"""

from dataclasses import dataclass

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
# Tokens kept free for the answer when a window is known and no reserve_output is set.
DEFAULT_RESERVE_OUTPUT = 4096


def known_window(model: str) -> int | None:
    name = model.strip().lower()
    best = max((k for k in CONTEXT_WINDOWS if name == k or name.startswith(k + "-")),
               key=len, default=None)
    return CONTEXT_WINDOWS[best] if best else None


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
