import io
from typing import Any

from django.conf import settings
from rest_framework.parsers import JSONParser

from contextstore.api.exceptions import PayloadTooLargeError


class LimitedJSONParser(JSONParser):
    """JSON bodies up to DATA_UPLOAD_MAX_MEMORY_SIZE bytes; anything bigger is a 413.

    DRF reads the raw stream, which skips Django's own body-size check, so it is done here;
    the read stops one byte past the limit whatever the Content-Length claims.
    """

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and stream is not None:
            request = (parser_context or {}).get("request")
            declared = request.META.get("CONTENT_LENGTH") if request is not None else None
            if declared and str(declared).isdigit() and int(declared) > limit:
                raise PayloadTooLargeError(f"The request body is larger than {limit} bytes.")
            body = stream.read(limit + 1)
            if len(body) > limit:
                raise PayloadTooLargeError(f"The request body is larger than {limit} bytes.")
            stream = io.BytesIO(body)
        return super().parse(stream, media_type, parser_context)


class MergePatchParser(LimitedJSONParser):
    """RFC 7386 bodies (`application/merge-patch+json`) for PATCH of thread state."""

    media_type = "application/merge-patch+json"
