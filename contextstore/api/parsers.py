"""JSON bodies, checked once at the boundary for everything the API, import and merge patches
share: size, nesting depth, duplicate keys, lone surrogates and NUL characters.

Every refusal is a 400 (413 for size) in the usual error shape, with the place named in
`details` (`body`, or a path such as `events[0].data.x`).
"""

import io
import json
import re
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

from contextstore.api.exceptions import PayloadTooLargeError

MAX_JSON_DEPTH = 64
# A JSON string literal (unrolled loop: fast on long strings); brackets inside one don't nest.
# An unterminated one runs to the end, so every match succeeds and the scan stays linear.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_INNERMOST = re.compile(r"\[\]|\{\}")
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
# Only escapes can put a surrogate or NUL into a decoded string: strict UTF-8 refuses encoded
# surrogates, and json refuses raw control characters inside strings.
_SUSPECT_ESCAPE = re.compile(r"\\u(?:d[89a-f][0-9a-f]{2}|0000)", re.IGNORECASE)


def json_depth_exceeded(text: str, limit: int = MAX_JSON_DEPTH) -> int | None:
    """The character offset where `text` nests deeper than `limit`, or None.

    Runs before json.loads (whose recursion a deep body would exhaust). The fast path strips
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
            position = _STRING.match(text, position).end()
            continue
        if char in "[{":
            depth += 1
            if depth > limit:
                return position
        elif char in "]}":
            depth -= 1
        position += 1
    return None  # unbalanced, not deep: json.loads reports it


class _Duplicate(dict):
    """An object that had a repeated key; found again after parsing to name its path."""

    def __init__(self, pairs: list[tuple[str, Any]], key: str):
        super().__init__(pairs)
        self.duplicate = key


def _pairs_hook(seen: list[bool]):
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
    if "\x00" in value:
        return "NUL characters (U+0000) are not accepted"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "lone surrogates (e.g. \\ud800) are not valid text"
    return None


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def find_bad_value(value: Any, path: str = "") -> tuple[str, str] | None:
    """(path, problem) of the first duplicate key, lone surrogate or NUL in a parsed body."""
    if isinstance(value, str):
        problem = _bad_text(value)
        return (path or "body", problem) if problem else None
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


def loads_strict(text: str) -> Any:
    """json.loads with the boundary's rules; raises ValidationError naming the place."""
    offset = json_depth_exceeded(text)
    if offset is not None:
        raise ValidationError({"body": f"JSON nested deeper than {MAX_JSON_DEPTH} levels "
                                       f"(at character {offset})."})
    duplicate = [False]
    try:
        data = json.loads(text, object_pairs_hook=_pairs_hook(duplicate))
    except RecursionError as exc:  # belt and braces: the depth check should have caught it
        raise ValidationError({"body": "JSON nested too deeply."}) from exc
    except ValueError as exc:
        raise ParseError(f"JSON parse error - {exc}") from exc
    if duplicate[0] or _SUSPECT_ESCAPE.search(text):
        found = find_bad_value(data)
        if found:
            raise ValidationError({found[0]: found[1]})
    return data


class LimitedJSONParser(JSONParser):
    """JSON bodies up to DATA_UPLOAD_MAX_MEMORY_SIZE bytes (bigger is a 413), at most 64 levels
    deep, without duplicate keys, lone surrogates or NUL characters (400 naming where).

    DRF reads the raw stream, which skips Django's own body-size check, so it is done here;
    the read stops one byte past the limit whatever the Content-Length claims.
    """

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if stream is None:
            return None
        if limit is not None:
            request = (parser_context or {}).get("request")
            declared = request.META.get("CONTENT_LENGTH") if request is not None else None
            if declared and str(declared).isdigit() and int(declared) > limit:
                raise PayloadTooLargeError(f"The request body is larger than {limit} bytes.")
            raw = stream.read(limit + 1)
            if len(raw) > limit:
                raise PayloadTooLargeError(f"The request body is larger than {limit} bytes.")
        else:
            raw = stream.read()
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = io.TextIOWrapper(io.BytesIO(raw), encoding=encoding).read()
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"The body is not valid {encoding}: {exc}") from exc
        return loads_strict(text)


class MergePatchParser(LimitedJSONParser):
    """RFC 7386 bodies (`application/merge-patch+json`) for PATCH of thread state."""

    media_type = "application/merge-patch+json"
