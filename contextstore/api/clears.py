"""A thread's clear-context records and their inverse, un-clear:
GET /api/v1/threads/{id}/clears/ and POST /api/v1/threads/{id}/clears/{clear}/undo/."""

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api import serializers as s
from contextstore.api.common import actor_of, token_of
from contextstore.models import Clear, Thread
from contextstore.services import threads


@extend_schema(tags=["threads"])
class ClearViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.ClearSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[Clear]:
        # Scoped by workspace and thread: another workspace's thread or clear is a 404.
        thread = get_object_or_404(Thread, workspace=token_of(self.request).workspace,
                                   pk=self.kwargs["thread_pk"])
        return Clear.objects.filter(thread=thread)

    @extend_schema(request=None, responses=s.UnclearedSerializer,
                   summary="Un-clear: bring a clear's events and summary back")
    @action(detail=True, methods=["post"])
    def undo(self, request: Request, thread_pk: str, pk: str) -> Response:
        clear = threads.thread_unclear(clear=self.get_object(), actor=actor_of(request))
        return Response({"restored": clear.restored, "summary_restored": clear.summary_restored,
                         "clear": s.ClearSerializer(clear).data})
