"""The one definition of a thread's summarizer setting (token budget, per-run, backend, model):
checked and normalised here by every door that takes one (the API's thread settings, an
import's thread), and by the workspace defaults read from the environment."""

from typing import Any

from django.conf import settings

from contextstore.errors import InvalidInput
from contextstore.summarizers import BACKENDS


def bounded_int(value: Any, name: str, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise InvalidInput(f"{name} must be an integer between {lo} and {hi}.", details={name: value})
    return value


def _section(config: dict[str, Any], name: str, allowed: set[str]) -> dict[str, Any] | None:
    section = config.get(name)
    if section is None:
        return None
    if not isinstance(section, dict):
        raise InvalidInput(f"{name} must be an object or null.", details={name: "object"})
    unknown = set(section) - allowed
    if unknown:
        field = f"{name}.{sorted(unknown)[0]}"
        raise InvalidInput(f"Unknown setting {field}.", details={field: "unknown field"})
    return section


def summarizer_config_clean(config: Any) -> dict[str, Any]:
    """Validate a summarizer setting and return it normalised (defaults filled in)."""
    if not isinstance(config, dict):
        raise InvalidInput("The summarizer setting must be an object or null.",
                           details={"summarizer": "object or null"})
    unknown = set(config) - {"token_budget", "per_run", "backend", "model"}
    if unknown:
        field = sorted(unknown)[0]
        raise InvalidInput(f"Unknown setting {field}.", details={field: "unknown field"})
    clean: dict[str, Any] = {}
    budget = _section(config, "token_budget", {"max_tokens", "preserve_recent", "summary_max_tokens"})
    if budget is not None:
        # Without max_tokens the thread's model budget applies (context window - reserve).
        max_tokens = None
        if budget.get("max_tokens") is not None:
            max_tokens = bounded_int(budget["max_tokens"], "token_budget.max_tokens", 256, 10_000_000)
        ceiling = max_tokens or 10_000_000
        cap = min(settings.SUMMARIZER_MAX_TOKENS, ceiling // 4)
        clean["token_budget"] = {
            "max_tokens": max_tokens,
            "preserve_recent": bounded_int(budget.get("preserve_recent", 10),
                                           "token_budget.preserve_recent", 0, 10_000),
            "summary_max_tokens": bounded_int(budget.get("summary_max_tokens", cap),
                                              "token_budget.summary_max_tokens", 64, ceiling // 2),
        }
    per_run = _section(config, "per_run", {"min_events"})
    if per_run is not None:
        clean["per_run"] = {"min_events": bounded_int(per_run.get("min_events", 3),
                                                      "per_run.min_events", 1, 1_000_000)}
    backend = config.get("backend")
    if backend is not None:
        if backend not in BACKENDS:
            raise InvalidInput(f"backend must be one of {', '.join(BACKENDS)}.",
                               details={"backend": backend})
        clean["backend"] = backend
    model = config.get("model")
    if model is not None:
        if not isinstance(model, str) or not 0 < len(model) <= 200:
            raise InvalidInput("model must be a string (at most 200 characters).",
                               details={"model": model})
        clean["model"] = model
    return clean
