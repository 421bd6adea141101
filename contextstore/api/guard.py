"""Query strings and paths of API requests, checked before any view runs.

Django decodes percent-escapes leniently (an invalid UTF-8 sequence becomes U+FFFD, so no lone
surrogate gets through), but `%00` arrives as a NUL character. Paths and query strings carry
names, ids and search terms, and no name or id holds a NUL (contextstore.fields): refused here
with the same 400 on both databases. JSON bodies, where agent text may hold NUL, are checked by
the parsers (contextstore.api.parsers).
"""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from contextstore.errors import error_body

NUL = "\x00"


def _refuse(place: str) -> JsonResponse:
    message = "NUL characters (U+0000) are not accepted"
    return JsonResponse(error_body("invalid", f"{place}: {message}", {place: message}), status=400)


class ApiInputGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            if NUL in request.path:
                return _refuse("path")
            for key, values in request.GET.lists():
                if NUL in key or any(NUL in value for value in values):
                    return _refuse(key.replace(NUL, "\\x00"))
        return self.get_response(request)
