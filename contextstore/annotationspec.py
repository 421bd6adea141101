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


def check_score(*, name: Any, data_type: Any, value: Any, comment: Any = "") -> None:
    """Refuse a score no door may store (services.scores.score_add stores a checked one)."""
    if not isinstance(name, str) or not SCORE_NAME.fullmatch(name.strip()):
        raise InvalidInput("name is required: at most 100 characters, without ':'.",
                           details={"name": "1 to 100 characters, no ':'"})
    score_value(data_type, value)
    if not isinstance(comment, str) or len(comment) > MAX_TEXT or "\x00" in comment:
        raise InvalidInput(f"comment must be a string of at most {MAX_TEXT} characters.",
                           details={"comment": "string"})
