"""The API's one list shape, `{"results": [...], "next": url|null}` (docs/api.md), built only here:
`page()` answers it, for the default paginator below (opaque `cursor` links, oldest first), for
the event pages (keyset links on `after_seq`, made by `next_link`) and for lists that are complete
in one answer (a thread's blocks, a block's versions, a memory recall: `next` is null).

The agent sessions' list keeps the shape it is documented with and the client reads
(`{"results", "next_cursor", "app_state", "user_states"}`, api/agent_sessions.py)."""

from typing import Any
from urllib.parse import urlencode

from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.ranges import positive_int


def page(results: Any, next_url: str | None = None) -> Response:
    """One page of a list: its results and the link to the next page (None: the last page)."""
    return Response({"results": results, "next": next_url})


def next_link(request: Request, **params: Any) -> str:
    """This request's URL with `params` set (the rest of its query kept): a keyset page's link."""
    query = request.query_params.copy()
    for key, value in params.items():
        query[key] = str(value)
    return request.build_absolute_uri(request.path) + "?" + urlencode(query, doseq=True)


class OldestFirstCursorPagination(CursorPagination):
    """Cursor pages oldest first, shaped {"results": [...], "next": url|null}."""

    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def get_paginated_response(self, data: list[Any]) -> Response:
        return page(data, self.get_next_link())

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

    def get_next_link(self) -> None:
        return None
