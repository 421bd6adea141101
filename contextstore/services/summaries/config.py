"""A thread's summarizer setting: validated and normalised, resolved (the thread's own, else a
workspace default, else the global default from settings) and its token budget."""

import functools
import json
import logging
from typing import Any

from django.conf import settings

from contextstore.errors import InvalidInput
from contextstore.llm_models import thread_model_settings
from contextstore.models import Thread
from contextstore.summarizerspec import summarizer_config_clean

logger = logging.getLogger(__name__)


def thread_summarizer_config(thread: Thread) -> dict[str, Any] | None:
    """The thread's own setting, else the workspace-wide default from settings, else None."""
    if thread.summarizer is not None:
        return thread.summarizer or None
    per_workspace = settings.SUMMARIZER_WORKSPACE_DEFAULTS
    default = per_workspace.get(thread.workspace.slug) if per_workspace else None
    if default is None:
        default = settings.SUMMARIZER_DEFAULT
    return None if default is None else clean_default(json.dumps(default, sort_keys=True))


@functools.lru_cache(maxsize=64)
def clean_default(raw: str) -> dict[str, Any] | None:
    """A default from the environment, validated once. A bad one is logged and ignored: a
    typo in a setting must not break every append."""
    try:
        return summarizer_config_clean(json.loads(raw)) or None
    except InvalidInput as exc:
        logger.error("ignoring an invalid summarizer default %s: %s", raw, exc.message)
        return None



def budget_tokens(thread: Thread, budget: dict) -> int:
    """token_budget.max_tokens, or when it is not set the thread's model budget."""
    if budget.get("max_tokens"):
        return budget["max_tokens"]
    return thread_model_settings(thread).budget
