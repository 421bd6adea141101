"""The one definition of what people and evaluators attach to a session or an LLM call: a
comment's text and a score (name, data type, value, comment). Checked at the doors (the
dashboard's comment and score forms and views, the API's scores) before services.comments or
services.scores write, so each door refuses bad input with the same message and details."""

import math
import re
from typing import Any

from contextstore.errors import InvalidInput

MAX_TEXT = 10_000
SCORE_NAME = re.compile(r"[^:\x00]{1,100}")  # ':' would be ambiguous in the list's score filter
SCORE_TYPES = ("numeric", "categorical", "boolean")  # Score.DataType's values


def comment_text(text: object) -> str:
    """A comment's text as stored (trimmed), or InvalidInput."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("The comment is empty.", details={"text": "required"})
    if len(text) > MAX_TEXT:
        raise InvalidInput(f"The comment is longer than {MAX_TEXT} characters.",
                           details={"text": f"at most {MAX_TEXT} characters"})
    if "\x00" in text:
        raise InvalidInput("The comment holds a NUL character.", details={"text": "no NUL"})
    return text.strip()


def score_value(data_type: Any, value: Any) -> tuple[float | None, str]:
    """(value, string_value) as stored, or InvalidInput saying what the type takes."""
    if data_type == "numeric":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInput("A numeric score's value must be a number.",
                               details={"value": "number"})
        if not math.isfinite(value):
            raise InvalidInput("A numeric score's value must be finite (not NaN or infinity).",
                               details={"value": "finite number"})
        return float(value), ""
    if data_type == "boolean":
        if not isinstance(value, bool):
            raise InvalidInput("A boolean score's value must be true or false.",
                               details={"value": "true or false"})
        return float(value), "true" if value else "false"
    if data_type == "categorical":
        if not isinstance(value, str) or not value.strip() or len(value) > 200 or "\x00" in value:
            raise InvalidInput("A categorical score's value must be a non-empty string "
                               "(at most 200 characters).", details={"value": "non-empty string"})
        return None, value.strip()
    raise InvalidInput("data_type must be numeric, categorical or boolean.",
                       details={"data_type": "numeric, categorical or boolean"})


def check_score(*, name: Any, data_type: Any, value: Any, comment: Any = "",
                config: Any = None) -> None:
    """Refuse a score no door may store (services.scores.score_add stores a checked one);
    `config` is the ScoreConfig of its name, when the workspace configured one
    (selectors.annotation.score_config_named)."""
    if not isinstance(name, str) or not SCORE_NAME.fullmatch(name.strip()):
        raise InvalidInput("name is required: at most 100 characters, without ':'.",
                           details={"name": "1 to 100 characters, no ':'"})
    score_value(data_type, value)
    if config is not None:
        score_fits_config(config, data_type=data_type, value=value)
    if not isinstance(comment, str) or len(comment) > MAX_TEXT or "\x00" in comment:
        raise InvalidInput(f"comment must be a string of at most {MAX_TEXT} characters.",
                           details={"comment": "string"})


# Score configurations (Langfuse's score configs): a name a workspace gives one data type and
# its bounds. A score of a configured name is checked against its config at every door
# (check_score's `config`), the annotation queue's form being one of them.
MAX_CATEGORIES = 50


def score_config_fields(*, name: Any, data_type: Any, min_value: Any = None, max_value: Any = None,
                        categories: Any = None, description: Any = "") -> dict[str, Any]:
    """A score configuration as stored (name trimmed, bounds as floats, categories trimmed and
    unique), or InvalidInput naming the field."""
    if not isinstance(name, str) or not SCORE_NAME.fullmatch(name.strip()):
        raise InvalidInput("name is required: at most 100 characters, without ':'.",
                           details={"name": "1 to 100 characters, no ':'"})
    if data_type not in SCORE_TYPES:
        raise InvalidInput("data_type must be numeric, categorical or boolean.",
                           details={"data_type": "numeric, categorical or boolean"})
    bounds: list[float | None] = []
    for field, bound in (("min_value", min_value), ("max_value", max_value)):
        if bound is None or bound == "":
            bounds.append(None)
            continue
        if data_type != "numeric":
            raise InvalidInput(f"{field} is for numeric scores only.", details={field: "numeric only"})
        if isinstance(bound, bool) or not isinstance(bound, int | float) or not math.isfinite(bound):
            raise InvalidInput(f"{field} must be a finite number.", details={field: "finite number"})
        bounds.append(float(bound))
    low, high = bounds
    if low is not None and high is not None and low > high:
        raise InvalidInput("min_value is greater than max_value.",
                           details={"min_value": "at most max_value"})
    labels: list[str] = []
    if data_type == "categorical":
        if not isinstance(categories, list) or not categories:
            raise InvalidInput("A categorical score configuration needs its categories.",
                               details={"categories": "a list of 1 to 50 names"})
        for raw in categories:
            if not isinstance(raw, str) or not raw.strip() or len(raw) > 200 or "\x00" in raw:
                raise InvalidInput("Each category is a non-empty name of at most 200 characters.",
                                   details={"categories": "non-empty names"})
            if raw.strip() not in labels:
                labels.append(raw.strip())
        if len(labels) > MAX_CATEGORIES:
            raise InvalidInput(f"At most {MAX_CATEGORIES} categories.",
                               details={"categories": f"at most {MAX_CATEGORIES}"})
    elif categories:
        raise InvalidInput("categories are for categorical scores only.",
                           details={"categories": "categorical only"})
    if not isinstance(description, str) or len(description) > MAX_TEXT or "\x00" in description:
        raise InvalidInput(f"description must be a string of at most {MAX_TEXT} characters.",
                           details={"description": "string"})
    return {"name": name.strip(), "data_type": data_type, "min_value": low, "max_value": high,
            "categories": labels, "description": description.strip()}


def score_fits_config(config: Any, *, data_type: Any, value: Any) -> None:
    """Refuse a score its name's configuration does not allow: another data type, a number out
    of its bounds, a category it does not list. `config` has the ScoreConfig fields."""
    name = config.name
    if data_type != config.data_type:
        raise InvalidInput(f"The score {name!r} is configured as {config.data_type}, not {data_type}.",
                           details={"data_type": config.data_type})
    number, text = score_value(data_type, value)
    if data_type == "numeric":
        assert number is not None
        if config.min_value is not None and number < config.min_value:
            raise InvalidInput(f"The score {name!r} is at least {config.min_value:g}.",
                               details={"value": f">= {config.min_value:g}"})
        if config.max_value is not None and number > config.max_value:
            raise InvalidInput(f"The score {name!r} is at most {config.max_value:g}.",
                               details={"value": f"<= {config.max_value:g}"})
    if data_type == "categorical" and text not in config.categories:
        raise InvalidInput(f"The score {name!r} is one of: {', '.join(config.categories)}.",
                           details={"value": list(config.categories)})


def checked_scores(configs: list[Any], given: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scores a reviewer gave a queue's item ({"name", "value", "comment"} each), each named
    by one of the queue's configs, at most once, and fitting it: as
    services.annotation.queue_complete_item stores them (with their data type)."""
    by_name = {c.name: c for c in configs}
    out: list[dict[str, Any]] = []
    for score in given:
        name = score.get("name")
        config = by_name.get(name.strip()) if isinstance(name, str) else None
        if config is None:
            raise InvalidInput(f"This queue asks for {', '.join(sorted(by_name))}, not {name!r}.",
                               details={"name": sorted(by_name)})
        if any(s["name"] == config.name for s in out):
            raise InvalidInput(f"{config.name!r} is given twice.", details={"name": "once each"})
        value = score.get("value")
        if config.data_type == "numeric" and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        comment = score.get("comment") or ""
        check_score(name=config.name, data_type=config.data_type, value=value, comment=comment,
                    config=config)
        out.append({"name": config.name, "data_type": config.data_type, "value": value,
                    "comment": comment})
    return out
