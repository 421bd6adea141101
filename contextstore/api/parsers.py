"""JSON bodies, checked once at the boundary for everything the API, import and merge patches
share: size, nesting depth, duplicate keys, lone surrogates and numbers JSON does not have
(NaN, Infinity).

Every refusal is a 400 (413 for size) in the usual error shape, with the place named in
`details` (`body`, or a path such as `events[0].data.x`).
"""

import io
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

from contextstore.api.exceptions import PayloadTooLargeError
from contextstore.jsonstrict import MAX_JSON_DEPTH, JSONRefused, strict_loads
from contextstore.ranges import positive_int

__all__ = ["MAX_JSON_DEPTH", "LimitedJSONParser", "MergePatchParser", "loads_strict"]


def loads_strict(text: str) -> Any:
    """strict_loads for DRF: a broken rule is a 400 naming its place; not JSON is a parse error."""
    try:
        return strict_loads(text)
    except JSONRefused as exc:
        raise ValidationError({exc.place: exc.message}) from exc
    except ValueError as exc:
        raise ParseError(f"JSON parse error - {exc}") from exc


class LimitedJSONParser(JSONParser):
    """JSON bodies up to DATA_UPLOAD_MAX_MEMORY_SIZE bytes (bigger is a 413), at most 64 levels
    deep, without duplicate keys, lone surrogates, NaN or Infinity (400 naming where).

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
            size = positive_int(str(declared or ""), zero=True, maximum=2**63 - 1)
            if size is not None and size > limit:
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
