"""The one definition of an experiment's variant, checked at its doors (the dashboard's form on a
dataset's page, the API's serializer) before services.experiments keeps it: a name, a system
prompt that replaces the recorded one, a template for the last user message, a model, request
params laid over each item's own, and the evaluators that score each output."""

import math
import re
from typing import Any

from contextstore.errors import InvalidInput

MAX_PROMPT = 100_000
INPUT = "{input}"  # in a template: the last user message's recorded text
MAX_EVALUATORS = 20
EVALUATOR = re.compile(r"builtin:[a-z_]{1,40}|[0-9]{1,18}")
# The evaluators every workspace has (services/experiments.py runs them), by key: their names.
BUILTIN_EVALUATORS = {"builtin:exact_match": "exact match", "builtin:similarity": "similarity"}
# The params a variant may set, with the range each takes (what the chat-completions APIs accept).
NUMBER_PARAMS: dict[str, tuple[float, float]] = {
    "temperature": (0.0, 2.0), "top_p": (0.0, 1.0),
    "presence_penalty": (-2.0, 2.0), "frequency_penalty": (-2.0, 2.0)}
INT_PARAMS: dict[str, tuple[int, int]] = {
    "max_tokens": (1, 1_000_000), "seed": (-(2 ** 53), 2 ** 53)}


def _text(data: dict[str, Any], key: str, limit: int, *, required: bool = False) -> str:
    value = data.get(key, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"The experiment's {key} must be text.", details={key: "text"})
    if "\x00" in value:
        raise InvalidInput(f"The experiment's {key} holds a NUL character.", details={key: "no NUL"})
    if len(value) > limit:
        raise InvalidInput(f"The experiment's {key} is longer than {limit} characters.",
                           details={key: f"at most {limit} characters"})
    if required and not value.strip():
        raise InvalidInput(f"Name the experiment's {key}.", details={key: "required"})
    return value


def experiment_params(params: Any) -> dict[str, Any]:
    """The params as kept: only those named above, each a number in its range."""
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise InvalidInput("The experiment's params must be an object.", details={"params": "object"})
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key in NUMBER_PARAMS:
            low, high = NUMBER_PARAMS[key]
            ok = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
            if not ok or not low <= value <= high:
                raise InvalidInput(f"{key} must be a number from {low:g} to {high:g}.",
                                   details={key: f"{low:g}–{high:g}"})
            out[key] = value
        elif key in INT_PARAMS:
            low_i, high_i = INT_PARAMS[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low_i <= value <= high_i:
                raise InvalidInput(f"{key} must be a whole number from {low_i} to {high_i}.",
                                   details={key: f"{low_i}–{high_i}"})
            out[key] = value
        else:
            names = ", ".join(sorted({*NUMBER_PARAMS, *INT_PARAMS}))
            raise InvalidInput(f"An experiment sets only these params: {names}.",
                               details={"params": f"unknown: {str(key)[:60]}"})
    return out


def experiment_variant(data: dict[str, Any]) -> dict[str, Any]:
    """name, system_prompt, template, model, params and evaluators as kept, or InvalidInput."""
    name = " ".join(_text(data, "name", 200, required=True).split())
    evaluators = data.get("evaluators") or []
    if not isinstance(evaluators, list) or len(evaluators) > MAX_EVALUATORS or not all(
            isinstance(e, str | int) and not isinstance(e, bool) and EVALUATOR.fullmatch(str(e))
            for e in evaluators):
        raise InvalidInput(f"Evaluators are a list of at most {MAX_EVALUATORS} evaluator ids or "
                           "builtin:<name>.", details={"evaluators": "list of ids"})
    unknown = [e for e in map(str, evaluators) if e.startswith("builtin:") and e not in BUILTIN_EVALUATORS]
    if unknown:
        raise InvalidInput(f"No built-in evaluator {unknown[0]}; there are "
                           f"{', '.join(BUILTIN_EVALUATORS)}.", details={"evaluators": "unknown built-in"})
    return {"name": name,
            "system_prompt": _text(data, "system_prompt", MAX_PROMPT),
            "template": _text(data, "template", MAX_PROMPT),
            "model": _text(data, "model", 200).strip(),
            "params": experiment_params(data.get("params")),
            "evaluators": list(dict.fromkeys(str(e) for e in evaluators))}
