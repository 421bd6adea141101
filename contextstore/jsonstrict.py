"""JSON as the service accepts it, checked while parsing: at most 64 levels deep, no repeated key
in an object, no lone surrogate in any string or key (not valid Unicode), and only numbers JSON
has (RFC 8259: no NaN or Infinity, nor a number beyond a double's range, which Python would read
as infinity). Any valid string is accepted, NUL included (contextstore.fields stores it). Shared
by the API's parsers (contextstore.api.parsers) and JSON form fields (contextstore.fields); no
Django imports.
"""

import json
import math
import re
from collections.abc import Callable
from typing import Any

MAX_JSON_DEPTH = 64
# A JSON string literal (unrolled loop: fast on long strings); brackets inside one don't nest.
# An unterminated one runs to the end, so every match succeeds and the scan stays linear.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_INNERMOST = re.compile(r"\[\]|\{\}")
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
# Only an escape can put a surrogate into a decoded string: strict UTF-8 refuses encoded ones.
_SURROGATE_ESCAPE = re.compile(r"\\ud[89a-f][0-9a-f]{2}", re.IGNORECASE)
NOT_A_NUMBER = "NaN, Infinity and numbers beyond a double's range are not JSON numbers (RFC 8259)"


def json_depth_exceeded(text: str, limit: int = MAX_JSON_DEPTH) -> int | None:
    """The character offset where `text` nests deeper than `limit`, or None; for any text,
    JSON or not (it names where a refused body went too deep). The fast path strips
    strings and all but brackets, then peels innermost pairs `limit` times at C speed; only a
    body that still has brackets left is walked to find where it went too deep.
    """
    structure = _NOT_BRACKET.sub("", _STRING.sub('""', text))
    for _ in range(limit):
        if not structure:
            return None
        peeled = _INNERMOST.sub("", structure)
        if peeled == structure:
            break
        structure = peeled
    if not structure:
        return None
    depth, position, length = 0, 0, len(text)
    while position < length:
        char = text[position]
        if char == '"':
            literal = _STRING.match(text, position)
            assert literal is not None  # every string literal matches, terminated or not
            position = literal.end()
            continue
        if char in "[{":
            depth += 1
            if depth > limit:
                return position
        elif char in "]}":
            depth -= 1
        position += 1
    return None  # unbalanced, not deep: json.loads reports it


class _Duplicate(dict[str, Any]):
    """An object that had a repeated key; found again after parsing to name its path."""

    def __init__(self, pairs: list[tuple[str, Any]], key: str):
        super().__init__(pairs)
        self.duplicate = key


def _pairs_hook(seen: list[bool]) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) != len(pairs):
            keys: set[str] = set()
            for key, _ in pairs:
                if key in keys:
                    seen[0] = True
                    return _Duplicate(pairs, key)
                keys.add(key)
        return result
    return hook


def _bad_text(value: str) -> str | None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "lone surrogates (e.g. \\ud800) are not valid text"
    return None


def _constant_hook(seen: list[bool]) -> Callable[[str], float]:
    def hook(name: str) -> float:  # NaN, Infinity, -Infinity: found again after parsing
        seen[0] = True
        return float(name)
    return hook


def _float_hook(seen: list[bool]) -> Callable[[str], float]:
    def hook(literal: str) -> float:
        value = float(literal)
        if math.isinf(value):  # 1e999
            seen[0] = True
        return value
    return hook


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def find_bad_value(value: Any, path: str = "") -> tuple[str, str] | None:
    """(path, problem) of the first duplicate key, lone surrogate or number JSON does not have
    in a parsed body."""
    if isinstance(value, str):
        problem = _bad_text(value)
        return (path or "body", problem) if problem else None
    if isinstance(value, float):
        return None if math.isfinite(value) else (path or "body", NOT_A_NUMBER)
    if isinstance(value, dict):
        if isinstance(value, _Duplicate):
            return (_join(path, value.duplicate), "duplicate key in a JSON object")
        for key, item in value.items():
            problem = _bad_text(key)
            if problem:
                return (_join(path, ascii(key)[1:-1]), f"object key: {problem}")
            found = find_bad_value(item, _join(path, key))
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = find_bad_value(item, _join(path, index))
            if found:
                return found
    return None


class JSONRefused(ValueError):
    """A body that parses but breaks a rule; `place` names where (`body`, `state.plan`...)."""

    def __init__(self, place: str, message: str):
        super().__init__(f"{place}: {message}")
        self.place = place
        self.message = message


def too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a parsed value nests deeper than `limit`: its containers, level by level."""
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(limit):
        if not level:
            return False
        level = [child for item in level for child in (item.values() if isinstance(item, dict) else item)
                 if isinstance(child, (dict, list))]
    return bool(level)


def _refuse_if_deep(text: str) -> None:
    offset = json_depth_exceeded(text)
    if offset is not None:
        raise JSONRefused("body", f"JSON nested deeper than {MAX_JSON_DEPTH} levels "
                                  f"(at character {offset}).")


def strict_loads(text: str) -> Any:
    """json.loads with the rules above. Raises JSONRefused, or ValueError for text that is not
    JSON at all (json.JSONDecodeError).

    Parsed first, then measured: the parsed containers are counted level by level, which costs
    a fraction of scanning the text (json.loads stops a body too deep for its recursion with a
    RecursionError). The text is scanned only for a body refused or broken, so that a deep one
    is refused as deep, at the character where it went too deep, whatever else is wrong."""
    duplicate, not_finite = [False], [False]
    try:
        data = json.loads(text, object_pairs_hook=_pairs_hook(duplicate),
                          parse_constant=_constant_hook(not_finite), parse_float=_float_hook(not_finite))
    except RecursionError as exc:
        _refuse_if_deep(text)
        raise JSONRefused("body", "JSON nested too deeply.") from exc
    except ValueError:
        _refuse_if_deep(text)
        raise
    if too_deep(data):
        _refuse_if_deep(text)
        raise JSONRefused("body", f"JSON nested deeper than {MAX_JSON_DEPTH} levels.")
    if duplicate[0] or not_finite[0] or _SURROGATE_ESCAPE.search(text):
        found = find_bad_value(data)
        if found:
            raise JSONRefused(*found)
    return data


class StrictJSONDecoder(json.JSONDecoder):
    """For `forms.JSONField(decoder=...)`: the same rules in admin and dashboard forms."""

    def decode(self, s: str, *args: Any) -> Any:
        try:
            return strict_loads(s)
        except JSONRefused as exc:
            raise json.JSONDecodeError(str(exc), s, 0) from exc
