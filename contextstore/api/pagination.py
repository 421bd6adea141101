from typing import Any

from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.response import Response

from contextstore.ranges import positive_int


class OldestFirstCursorPagination(CursorPagination):
    """Cursor pages oldest first, shaped {"results": [...], "next": url|null}."""

    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def get_paginated_response(self, data: list[Any]) -> Response:
        return Response({"results": data, "next": self.get_next_link()})

    def decode_cursor(self, request: Any) -> Cursor | None:
        """DRF's, plus a position that must be an id (ordering is by the integer primary key):
        a hand-made cursor such as `p=abc` is an invalid cursor (404), not a server error."""
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            position: str = cursor.position  # type: ignore[assignment]  # decoded: a str (the stub says int)
            if positive_int(position, zero=True) is None:
                raise NotFound(self.invalid_cursor_message)
        return cursor

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["results", "next"],
            "properties": {
                "results": schema,
                "next": {"type": "string", "format": "uri", "nullable": True},
            },
        }


class SearchResultsPagination(OldestFirstCursorPagination):
    """For searches that already return a bounded result (memory recall): the same page shape,
    always complete, so `next` is null."""

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> list[Any]:
        return list(queryset)

    def get_paginated_response(self, data: list[Any]) -> Response:
        return Response({"results": data, "next": None})
