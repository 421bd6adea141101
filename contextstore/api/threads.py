"""/api/v1/threads/{id}/: the thread itself (read, delete a fork) and POST /threads/ensure/.
Its sub-resources have a viewset each, by subject: history.py (events, collapse, window, fork,
tokens, export, import), state.py (the document and the clientai operations), blocks.py,
providers.py (summarizer, runs, provider states) and renders.py (context, LLM calls); all share
common.ThreadSubjectViewSet, so every URL and operation id stays /threads/{id}/..."""

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api import serializers as s
from contextstore.api.common import ThreadSubjectViewSet, actor_of, body, parse, token_of
from contextstore.selectors.threads import thread_data_of_workspace
from contextstore.services import sessions, threads


@extend_schema(tags=["threads"])
class ThreadViewSet(mixins.RetrieveModelMixin, mixins.DestroyModelMixin, ThreadSubjectViewSet):
    # (no docstring: drf-spectacular would copy it into every operation description)

    def retrieve(self, request: Request, pk: str) -> Response:
        # One row, the workspace in its WHERE, printed as ThreadSerializer prints a thread:
        # the read of every agent step, without a model instance or the serializer's machinery.
        # No object permission to check: TokenScope has none, and any token reads.
        row = thread_data_of_workspace(workspace_id=token_of(request).workspace_id, pk=int(pk))
        if row is None:
            raise Http404
        return Response(s.thread_data(row))

    @extend_schema(responses={204: None}, summary="Delete a forked thread (the inverse of fork)",
                   description="Only forks; the parent is untouched and keeps every original. "
                               "What the fork added after forking is deleted with it, for good "
                               "(the audit log records the deletion). Not a fork: 409 not_a_fork.")
    def destroy(self, request: Request, pk: str) -> Response:
        threads.thread_delete_fork(thread=self.get_object(), actor=actor_of(request))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=s.ThreadEnsureSerializer,
                   responses={200: s.ThreadSerializer, 201: s.ThreadSerializer},
                   summary="Create the session and thread as needed; return the thread")
    @action(detail=False, methods=["post"])
    def ensure(self, request: Request) -> Response:
        data = parse(s.ThreadEnsureSerializer, body(request))
        thread, created = sessions.thread_ensure_by_key(
            workspace=token_of(request).workspace, actor=actor_of(request), **data)
        return self.thread_response(thread, status.HTTP_201_CREATED if created else status.HTTP_200_OK)
