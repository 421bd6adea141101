"""What every API module shares: the actor of a request, body and serializer parsing, the
revision ETag / If-Match, and the base of the viewsets under /threads/{id}/."""

import functools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.viewsets import GenericViewSet

from contextstore.api import serializers as s
from contextstore.api.parsers import LimitedJSONParser, MergePatchParser
from contextstore.errors import InvalidInput
from contextstore.models import ApiToken, ReadAudit, Thread
from contextstore.selectors.threads import thread_of_workspace
from contextstore.services.access_log import record_read
from contextstore.services.common import THREAD_STATE_FIELDS, Actor


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


@extend_schema(tags=["threads"])
class ThreadSubjectViewSet(GenericViewSet[Thread]):
    # The base of the viewsets under /threads/{id}/, one per subject (api/threads.py, history.py,
    # state.py, blocks.py, providers.py, renders.py): the thread looked up in the token's
    # workspace (404 otherwise) and the answers they share. (A comment, not a docstring:
    # drf-spectacular would copy a docstring into every operation's description.)

    serializer_class = s.ThreadSerializer
    lookup_value_regex = "[0-9]+"
    parser_classes = [LimitedJSONParser, MergePatchParser]

    if TYPE_CHECKING:  # the default paginator: a cursor paginator, which pages any queryset
        paginator: CursorPagination

        def paginate_queryset[M](self, queryset: QuerySet[Any, M] | Sequence[M]) -> list[M]: ...

    def get_queryset(self) -> QuerySet[Thread]:
        qs = Thread.objects.filter(workspace=token_of(self.request).workspace).select_related("session")
        if self.action == "events":  # reading and appending history never touch the state
            qs = qs.defer(*THREAD_STATE_FIELDS)
        return qs

    def get_object(self, *, with_session: bool = True) -> Thread:
        # get_queryset's thread, read through a query compiled once per process: every agent
        # step reads its thread, and building the queryset cost more than running it.
        thread = thread_of_workspace(
            workspace_id=token_of(self.request).workspace_id, pk=int(self.kwargs["pk"]),
            history_only=self.action == "events", with_session=with_session)
        if thread is None:
            raise Http404
        self.check_object_permissions(self.request, thread)
        return thread

    def thread_response(self, thread: Thread, code: int = status.HTTP_200_OK) -> Response:
        thread = self.get_queryset().get(pk=thread.pk)
        return Response(s.ThreadSerializer(thread).data, status=code)

    def state_response(self, thread: Thread) -> Response:
        return Response(s.StateSerializer(thread).data, headers={"ETag": etag_of(thread)})
