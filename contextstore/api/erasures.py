"""POST /api/v1/erasures/: erase a person of the token's workspace (GDPR Article 17), with a
token of admin scope; answers the receipt (services/erasure.py). Synchronous: the work runs in
bounded batches, each its own transaction, and a request cut short is finished by the next."""

from django.core.validators import RegexValidator
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api.common import actor_of, body, parse, token_of
from contextstore.api.permissions import AdminScope, TokenScope
from contextstore.services.erasure import AUDIT_REDACTED, KINDS, user_erase
from contextstore.sessionspec import NOT_BLANK


class ErasureInSerializer(serializers.Serializer):
    # Not blank: some character that is not whitespace (the schema says so as a pattern).
    user_id = serializers.CharField(
        max_length=255, trim_whitespace=False,
        validators=[RegexValidator(NOT_BLANK, message="This field may not be blank.")],
        help_text="The person's user id, as their sessions carry it.")


# One field per kind the receipt counts (the service's list, so the two never drift apart).
ErasureCountsSerializer = type("ErasureCountsSerializer", (serializers.Serializer,), {
    kind: serializers.IntegerField(min_value=0) for kind in [*KINDS.values(), AUDIT_REDACTED]})


class ErasureReceiptSerializer(serializers.Serializer):
    user_id = serializers.CharField()
    workspace = serializers.CharField(help_text="The workspace's slug.")
    counts = ErasureCountsSerializer(help_text="Rows erased, by kind (audit rows: redacted).")
    erased_at = serializers.DateTimeField()
    by = serializers.CharField(help_text="Who erased: the token's label.")


@extend_schema(tags=["erasures"])
class ErasureViewSet(viewsets.ViewSet):
    permission_classes = [TokenScope, AdminScope]

    @extend_schema(request=ErasureInSerializer,
                   responses={200: ErasureReceiptSerializer, 409: OpenApiResponse(
                       description="Some of the person's sessions are under a legal hold.")},
                   summary="Erase a person: every session, memory, state, span and text of "
                           "theirs (admin scope)")
    def create(self, request: Request) -> Response:
        data = parse(ErasureInSerializer, body(request))
        receipt = user_erase(workspace=token_of(request).workspace, user_id=data["user_id"],
                             actor=actor_of(request))
        return Response(receipt)
