"""The document POST /threads/import/ takes, for the schema only: a contextstore export (what
GET /threads/{id}/export/ answers) or a peteos context. services.transfer and services.peteos
check every field; these serializers state what they accept. Members the importer ignores (an
export's exported_at, an event's token_count, ...) are allowed, so no object here is closed."""

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from contextstore.api.providers import SUMMARIZER_SETTING
from contextstore.api.serializers import (
    JSON_ANY,
    SEQ_MAX,
    AgentText,
    BlockInSerializer,
    EventInSerializer,
    JSONObject,
)
from contextstore.models import Collapse, Event

INT32_MAX = 2**31 - 1
INT63_MAX = 2**63 - 1


def _count(maximum: int = INT63_MAX) -> serializers.IntegerField:
    return serializers.IntegerField(required=False, min_value=0, max_value=maximum)


class ExportEventSerializer(EventInSerializer):
    # Not closed (an export's events carry token_count, collapse, ...); the rule between two
    # of its fields: x-at-most (contextstore.api.schema).
    schema_rules = {"x-at-most": {"position": "seq"}}

    seq = serializers.IntegerField(min_value=1, max_value=SEQ_MAX)
    position = serializers.IntegerField(required=False, min_value=1, max_value=SEQ_MAX,
                                        help_text="Its working-context position: at or before "
                                                  "its seq (default: the seq).")
    status = serializers.ChoiceField(choices=Event.Status.values, required=False, allow_null=True)
    collapse = serializers.IntegerField(required=False, allow_null=True,
                                        help_text="The id of its collapse in `collapses`.")
    cleared_by = serializers.IntegerField(required=False, allow_null=True,
                                          help_text="The id of its clear in `clears`.")


class ExportCollapseSerializer(serializers.Serializer):
    id = serializers.IntegerField(required=False, allow_null=True)
    start_position = serializers.IntegerField(min_value=1, max_value=SEQ_MAX)
    end_position = serializers.IntegerField(min_value=1, max_value=SEQ_MAX)
    summary_seq = serializers.IntegerField(min_value=1, max_value=SEQ_MAX,
                                           help_text="The seq of its Summary event in `events`.")
    source = serializers.ChoiceField(choices=Collapse.Source.values, required=False)  # type: ignore[assignment]  # a field (the metaclass takes it off the class)
    actor = serializers.CharField(required=False, allow_blank=True, max_length=200)
    event_count = _count(INT32_MAX)
    tokens_before = _count()
    tokens_after = _count()
    provenance = JSONObject(required=False, allow_null=True)
    undone_at = serializers.DateTimeField(required=False, allow_null=True)


class ExportClearSerializer(serializers.Serializer):
    id = serializers.IntegerField(required=False, allow_null=True)
    actor = serializers.CharField(required=False, allow_blank=True, max_length=200)
    summary = serializers.CharField(required=False, allow_blank=True)
    event_count = _count(INT32_MAX)
    tokens = _count()
    undone_at = serializers.DateTimeField(required=False, allow_null=True)


class ExportBlockSerializer(BlockInSerializer):
    name = serializers.CharField(max_length=200)


class ExportSessionSerializer(serializers.Serializer):
    key = serializers.CharField(required=False, allow_blank=True, max_length=255,
                                help_text="Blank: the session_key parameter, or a new key.")
    user_id = serializers.CharField(required=False, allow_blank=True, max_length=255)
    agent = serializers.CharField(required=False, allow_blank=True, max_length=200)
    title = serializers.CharField(required=False, allow_blank=True, max_length=500)
    metadata = JSONObject(required=False, allow_null=True)


@extend_schema_field(SUMMARIZER_SETTING)
class SummarizerSetting(serializers.JSONField):
    pass


class ExportThreadSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=200,
                                 help_text="Blank: the name parameter, or main.")
    state = JSONObject(required=False)
    memory = serializers.ListField(child=JSONObject(), required=False)
    last_results = JSONObject(required=False)
    conversation_history = serializers.ListField(child=JSON_ANY(), required=False)
    current_input = JSON_ANY(required=False, allow_null=True)
    original_input = JSON_ANY(required=False, allow_null=True)
    iteration = serializers.IntegerField(required=False, min_value=-INT63_MAX, max_value=INT63_MAX)
    max_history_size = serializers.IntegerField(required=False, min_value=0, max_value=INT63_MAX)
    summary = AgentText(required=False, allow_blank=True)
    summarizer = SummarizerSetting(required=False)
    system_prompt = AgentText(required=False, allow_blank=True)
    tool_definitions = JSON_ANY(required=False, allow_null=True)
    extra = JSONObject(required=False)


class ThreadExportSerializer(serializers.Serializer):
    # The rules between members (contextstore.api.schema: x-numbered, x-unique-by, x-summary-of).
    schema_rules: dict[str, Any] = {
        "description": "A contextstore export: events with seqs 1, 2, 3... in order, no two "
                       "active ones at one position, each client_id once; each collapse names "
                       "a Summary event by its seq, each Summary event at most one collapse.",
        "x-numbered": {"events": "seq"},
        "x-unique-by": {"events": "client_id", "collapses": "summary_seq"},
        "x-summary-of": {"collapses": "summary_seq"},
    }

    format = serializers.ChoiceField(choices=["contextstore"])
    version = serializers.IntegerField(required=False)
    session = ExportSessionSerializer(required=False)
    thread = ExportThreadSerializer(required=False)
    events = ExportEventSerializer(many=True, required=False)
    blocks = ExportBlockSerializer(many=True, required=False)
    collapses = ExportCollapseSerializer(many=True, required=False)
    clears = ExportClearSerializer(many=True, required=False)


class PeteosMessageSerializer(serializers.Serializer):
    id = serializers.CharField(required=False, max_length=200)
    role = serializers.CharField(required=False, allow_blank=True, max_length=32)
    content = AgentText(required=False, allow_blank=True)


class PeteosContextSerializer(serializers.Serializer):
    schema_rules = {"description": "A peteos context (Context.raw_dict); its format is not "
                                   "contextstore.",
                    "not": {"required": ["format"],
                            "properties": {"format": {"allOf": [{"enum": ["contextstore"]}]}}}}

    id = serializers.CharField(required=False, max_length=255)
    messages = PeteosMessageSerializer(many=True)
    system_prompt_message_id = serializers.CharField(required=False, allow_null=True)
    tool_definitions_message_id = serializers.CharField(required=False, allow_null=True)
    anchor_points = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2),
        required=False, help_text="[name, end_index] pairs (an end is an integer).")


IMPORT_DOCUMENT = PolymorphicProxySerializer(
    component_name="ImportDocument", resource_type_field_name=None,
    serializers=[ThreadExportSerializer, PeteosContextSerializer])
