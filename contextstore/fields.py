import json
from typing import Any

from django import forms
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from contextstore.jsonstrict import StrictJSONDecoder

_ENCODER = DjangoJSONEncoder(ensure_ascii=False)  # json.dumps(cls=...) builds one on every call


class JSONText(str):
    """JSON already serialized by the caller (who also needed its size): stored as it is."""


# django-stubs make fields generic; Django's own TextField takes no [...] at runtime.
class OrderedJSONField(models.TextField):  # type: ignore[type-arg]
    """JSON stored as text, so objects come back with their keys in the order written.

    PostgreSQL's jsonb sorts object keys; agents read their state back verbatim, and clientai's
    history text lists step results in insertion order, so that order is part of the data.
    """

    # Any JSON value, to django-stubs' plugin (which reads these) as to its own JSONField.
    _pyi_private_set_type: Any
    _pyi_private_get_type: Any

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Any:
        return None if value is None else json.loads(value)

    def to_python(self, value: Any) -> Any:
        return value

    def get_prep_value(self, value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, JSONText):
            return str(value)
        return _ENCODER.encode(value)

    def value_to_string(self, obj: models.Model) -> str:
        return self.get_prep_value(self.value_from_object(obj)) or "null"

    def formfield(self, **kwargs: Any) -> forms.Field:
        # The API's JSON rules (depth, repeated keys, surrogates, NUL) hold in forms too.
        return forms.JSONField(**{"required": not self.blank, "decoder": StrictJSONDecoder, **kwargs})
