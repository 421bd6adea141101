"""The one definition of an evaluator's input: its name, kind, target, sampling rule and each
kind's settings. Checked at the doors (the API's serializer, the dashboard's form) before
services/evaluators.py writes; returns the settings as stored, or InvalidInput saying what is
wrong, with the same message at every door.

Settings by kind (a version's `config`; the judge's prompt and model are columns of their own):
- llm_judge: score_type numeric | boolean | categorical, categories (categorical: the names
  the judge may give; none: any), and the prompt, which names {{output}} (and may name {{input}}).
- regex: pattern (Python `regex` syntax, matched on the reply's text), ignore_case, must_match
  (false: the score is true when the pattern is NOT found).
- json_schema: schema (Draft 2020-12), which the reply's text, parsed as JSON, must satisfy.
- tool_call: check called | not_called | no_failed; tool (the name, for called / not_called);
  arguments (for called: an object the call's arguments must contain, key by key).
- cost_limit: max_cost (USD). latency_limit: max_ms.
"""

import math
from typing import Any

import jsonschema
import regex

from contextstore.annotationspec import SCORE_NAME
from contextstore.errors import InvalidInput

KINDS = ("llm_judge", "regex", "json_schema", "tool_call", "cost_limit", "latency_limit")
TARGETS = ("call", "session")
SCORE_TYPES = ("numeric", "boolean", "categorical")
TOOL_CHECKS = ("called", "not_called", "no_failed")
MAX_PROMPT = 20_000
MAX_FILTER = 200


def _bad(field: str, message: str, detail: str) -> InvalidInput:
    return InvalidInput(message, details={field: detail})


def _number(config: dict[str, Any], key: str, *, positive: bool = False) -> float:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value < 0 or (positive and value == 0):
        raise _bad(key, f"{key} must be a {'positive' if positive else 'non-negative'} number.", "number")
    return float(value)


def _flag(config: dict[str, Any], key: str, default: bool) -> bool:
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise _bad(key, f"{key} must be true or false.", "true or false")
    return value


def _text(value: Any, field: str, *, limit: int, required: bool = False) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        raise _bad(field, f"{field} must be a string of at most {limit} characters.", "string")
    if required and not value.strip():
        raise _bad(field, f"{field} is required.", "required")
    return value.strip()


def evaluator_settings(*, name: Any, target: Any = "call", sample_rate: Any = 1.0,
                       filter_agent: Any = "", filter_model: Any = "") -> dict[str, Any]:
    """The evaluator's own fields (not versioned) as stored."""
    if not isinstance(name, str) or not SCORE_NAME.fullmatch(name.strip()):
        raise _bad("name", "name is required: at most 100 characters, without ':' "
                   "(the scores it writes are named after it).", "1 to 100 characters, no ':'")
    if target not in TARGETS:
        raise _bad("target", "target must be call or session.", "call or session")
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, int | float) \
            or not math.isfinite(sample_rate) or not 0 <= sample_rate <= 1:
        raise _bad("sample_rate", "sample_rate must be a number from 0 to 1.", "0 to 1")
    return {"name": name.strip(), "target": target, "sample_rate": float(sample_rate),
            "filter_agent": _text(filter_agent, "filter_agent", limit=MAX_FILTER),
            "filter_model": _text(filter_model, "filter_model", limit=MAX_FILTER)}


def evaluator_version(*, kind: Any, model: Any = "", prompt: Any = "",
                      config: Any = None) -> dict[str, Any]:
    """A version's fields (model, prompt, config) as stored, for an evaluator of `kind`."""
    if kind not in KINDS:
        raise _bad("kind", f"kind must be one of {', '.join(KINDS)}.", ", ".join(KINDS))
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise _bad("config", "config must be an object.", "object")
    model = _text(model, "model", limit=200, required=kind == "llm_judge")
    # a browser's form sends CRLF line ends: kept as LF, as the API's prompts are
    prompt = _text(prompt, "prompt", limit=MAX_PROMPT, required=kind == "llm_judge").replace("\r\n", "\n")
    if kind != "llm_judge":
        model = prompt = ""
    return {"model": model, "prompt": prompt, "config": _CHECKS[kind](config, prompt)}


def _judge(config: dict[str, Any], prompt: str) -> dict[str, Any]:
    if "{{output}}" not in prompt:
        raise _bad("prompt", "The judge's prompt must name {{output}} (and may name {{input}}).",
                   "names {{output}}")
    score_type = config.get("score_type", "numeric")
    if score_type not in SCORE_TYPES:
        raise _bad("score_type", "score_type must be numeric, boolean or categorical.",
                   "numeric, boolean or categorical")
    out: dict[str, Any] = {"score_type": score_type}
    categories = config.get("categories")
    if score_type == "categorical" and categories is not None:  # none: any category the judge names
        if not isinstance(categories, list) or not categories or not all(
                isinstance(c, str) and c.strip() and len(c) <= 200 and "\x00" not in c for c in categories):
            raise _bad("categories", "categories must be a list of names (at most 200 characters each).",
                       "list of names")
        out["categories"] = [c.strip() for c in categories]
    return out


def _regex(config: dict[str, Any], prompt: str) -> dict[str, Any]:
    pattern = config.get("pattern")  # not trimmed: a space can be what it looks for
    if not isinstance(pattern, str) or not pattern or len(pattern) > 2000 or "\x00" in pattern:
        raise _bad("pattern", "pattern is required: a regular expression of at most 2000 characters.",
                   "regular expression")
    try:
        regex.compile(pattern)
    except regex.error as exc:
        raise _bad("pattern", f"The pattern is not a regular expression: {exc}.",
                   "regular expression") from exc
    return {"pattern": pattern, "ignore_case": _flag(config, "ignore_case", False),
            "must_match": _flag(config, "must_match", True)}


def _schema(config: dict[str, Any], prompt: str) -> dict[str, Any]:
    schema = config.get("schema")
    if not isinstance(schema, dict | bool):
        raise _bad("schema", "schema must be a JSON Schema (an object).", "JSON Schema")
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise _bad("schema", f"The schema is not a valid JSON Schema: {exc.message}.", "JSON Schema") from exc
    return {"schema": schema}


def _tool(config: dict[str, Any], prompt: str) -> dict[str, Any]:
    check = config.get("check", "called")
    if check not in TOOL_CHECKS:
        raise _bad("check", "check must be called, not_called or no_failed.", ", ".join(TOOL_CHECKS))
    out: dict[str, Any] = {"check": check}
    if check != "no_failed":
        out["tool"] = _text(config.get("tool"), "tool", limit=200, required=True)
    if check == "called" and config.get("arguments") not in (None, {}):
        if not isinstance(config["arguments"], dict):
            raise _bad("arguments", "arguments must be an object the call's arguments contain.", "object")
        out["arguments"] = config["arguments"]
    return out


def _cost(config: dict[str, Any], prompt: str) -> dict[str, Any]:
    return {"max_cost": _number(config, "max_cost")}


def _latency(config: dict[str, Any], prompt: str) -> dict[str, Any]:
    return {"max_ms": _number(config, "max_ms", positive=True)}


_CHECKS = {"llm_judge": _judge, "regex": _regex, "json_schema": _schema, "tool_call": _tool,
           "cost_limit": _cost, "latency_limit": _latency}
