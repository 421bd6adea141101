"""What every API module shares: the actor of a request, body and serializer parsing, the
revision ETag / If-Match, page links, and the thread/state responses of ThreadViewSet's mixins."""

import functools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlencode

from django.db.models import QuerySet
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.viewsets import GenericViewSet

from contextstore.api import serializers as s
from contextstore.errors import InvalidInput
from contextstore.models import ApiToken, ReadAudit, Thread
from contextstore.services.access_log import record_read
from contextstore.services.common import Actor


def token_of(request: Request) -> ApiToken:
    """The token the request was authenticated with (TokenScope lets none through without)."""
    return cast(ApiToken, request.auth)  # the stubs type `auth` as DRF's authtoken Token


def actor_of(request: Request) -> Actor:
    return Actor.for_token(token_of(request), ip=request.META.get("REMOTE_ADDR"))


def note_read(request: Request, action: ReadAudit.Action, thread: Thread,
              target: Any = None) -> None:
    """Audit a token's read of a thread (or of `target` in it), once it succeeded: at most one
    statement an hour per token and object (services/access_log)."""
    record_read(actor=actor_of(request), action=action, target=thread if target is None else target,
                workspace_id=thread.workspace_id, session_id=thread.session_id)


@functools.cache
def _validator(serializer_class: type[Serializer]) -> Serializer:
    """One instance per input serializer, its fields built once: DRF deep-copies every declared
    field for each new instance (a sixth of a millisecond on the context query). Validation keeps
    nothing on the instance or its fields (no context, instance or mutable default is used by
    these serializers), so the threads of a process share it."""
    serializer = serializer_class()
    serializer.fields  # noqa: B018 -- bound here, once, rather than by the first request
    return serializer


def parse(serializer_class: type[Serializer], data: Any) -> dict[str, Any]:
    """The validated data, or ValidationError with DRF's details (as is_valid would raise)."""
    return _validator(serializer_class).run_validation(data)


def body(request: Request) -> Any:
    """The JSON body, which must be an object for every endpoint that takes one."""
    data = request.data
    if not isinstance(data, dict):
        raise ValidationError({"non_field_errors": ["The body must be a JSON object."]})
    return data


def etag_of(thread: Thread) -> str:
    return f'"{thread.revision}"'


IF_MATCH = re.compile(r'(?:W/)?("?)([0-9]{1,18})\1')


def if_match_revision(request: Request) -> int | None:
    """The revision an If-Match header names: `"3"`, `3` or weak `W/"3"` (compared like a strong
    one: a revision is exact either way); `*` or no header means any revision. Anything else,
    e.g. non-ASCII digits such as `"²"` or a list of tags, is a 400."""
    header = request.headers.get("If-Match")
    if header is None or header.strip() == "*":
        return None
    match = IF_MATCH.fullmatch(header.strip())
    if match is None:
        raise InvalidInput('If-Match must be a revision ETag such as "3" (ASCII digits).',
                           details={"If-Match": "must be a revision ETag such as \"3\""})
    return int(match.group(2))


def page_url(request: Request, **params: Any) -> str:
    query = request.query_params.copy()
    for key, value in params.items():
        query[key] = str(value)
    return request.build_absolute_uri(request.path) + "?" + urlencode(query, doseq=True)


if TYPE_CHECKING:  # what ThreadViewSet's mixins are mixed into, as a base the checker sees
    _ThreadViewSet = GenericViewSet[Thread]
else:
    _ThreadViewSet = object


class ThreadResponses(_ThreadViewSet):
    # The answers ThreadViewSet's actions share (a mixin of a GenericViewSet over threads; so
    # are the action mixins that subclass it). (no docstring: drf-spectacular would copy it
    # into every operation description)

    if TYPE_CHECKING:  # as ThreadViewSet has them: a cursor paginator, which pages any queryset
        paginator: CursorPagination

        def paginate_queryset[M](self, queryset: QuerySet[Any, M] | Sequence[M]) -> list[M]: ...

    def thread_response(self, thread: Thread, code: int = status.HTTP_200_OK) -> Response:
        thread = self.get_queryset().get(pk=thread.pk)
        return Response(s.ThreadSerializer(thread).data, status=code)

    def state_response(self, thread: Thread) -> Response:
        return Response(s.StateSerializer(thread).data, headers={"ETag": etag_of(thread)})
