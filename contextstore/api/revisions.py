"""One revision of a thread's document: the whole document then, and the diff that made it.

The list and restore are ThreadStateViewSet's (api/state.py: state/revisions/, .../restore/),
where clients already call them.
"""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api import serializers as s
from contextstore.api.common import token_of
from contextstore.documents import changed_fields
from contextstore.models import StateRevision, Thread
from contextstore.selectors.document import revision_diff, revision_document


@extend_schema(tags=["threads"])
class RevisionViewSet(viewsets.ViewSet):
    lookup_field = "revision"
    lookup_value_regex = "[0-9]+"

    @extend_schema(responses=s.RevisionDetailSerializer,
                   parameters=[OpenApiParameter("thread_pk", int, OpenApiParameter.PATH),
                               OpenApiParameter("revision", int, OpenApiParameter.PATH)],
                   summary="One revision: the whole document at it and the diff from the one before")
    def retrieve(self, request: Request, thread_pk: str, revision: str) -> Response:
        thread = get_object_or_404(Thread.objects.filter(workspace=token_of(request).workspace),
                                   pk=thread_pk)
        row = get_object_or_404(StateRevision.objects.defer("document", "patch"),
                                thread=thread, revision=int(revision))
        diff = revision_diff(thread=thread, revision=row.revision)
        return Response(s.RevisionDetailSerializer({
            "revision": row.revision, "reason": row.reason, "actor": row.actor,
            "created_at": row.created_at, "size": row.size, "snapshot": row.base == row.revision,
            "document": revision_document(thread=thread, revision=row.revision),
            "diff": diff, "changed": changed_fields(diff),
        }).data)
