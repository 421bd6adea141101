"""The storage boundary: how agent text and JSON are written to a column and read back.

Text. PostgreSQL's text cannot hold U+0000 (NUL), which agents do hold (a shell tool's output, a
clientai step result, an AgentScope Msg). Every text column of agent content (`AgentTextField`)
stores a NUL as U+2400 SYMBOL FOR NULL ("␀"), and escapes that symbol and the escape itself
with U+241B SYMBOL FOR ESCAPE ("␛"): NUL -> ␀, ␀ -> ␛␀, ␛ -> ␛␛. Any string round-trips, on
both databases alike (SQLite could hold NUL, but its LIKE stops at one). The stored text stays
searchable: ␀ separates the words around a NUL as NUL did, and a regex's `.` matches it. A
search term is escaped the same way (the lookups below), so it finds only what it names.

JSON (`OrderedJSONField`) is text written by the JSON encoder, which writes NUL as `\\u0000`.

Secrets. Every field here with `redacts = True` (agent text, JSON, and the CharFields and
TextFields of text people and agents write: titles, names, comments) replaces the secrets in a
value with their markers as it prepares it for the database (contextstore/redaction.py,
"the storage boundary"): save(), bulk_create, update(), bulk_update and every raw write of
contextstore/db.py (its INSERTs, UPDATEs and COPYs prepare values with get_db_prep_save) pass
through it, whoever the caller. tests/test_redaction_columns.py holds every other text or JSON
column of every model to a stated reason (ids, hashes, choices, ...).

Names and ids (CharField: keys, names, roles, call ids) are addressed in paths and query
strings, which cannot carry NUL: the services refuse it there (NUL_IN_NAME).
"""

import json
import re
from typing import Any

from django import forms
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import lookups

from contextstore.jsonstrict import StrictJSONDecoder
from contextstore.redaction import stored_json_text, stored_text, stored_value

_ENCODER = DjangoJSONEncoder(ensure_ascii=False)  # json.dumps(cls=...) builds one on every call

NUL, NUL_SYMBOL, ESCAPE = "\x00", "\u2400", "\u241b"
_TO_STORED = str.maketrans({NUL: NUL_SYMBOL, NUL_SYMBOL: ESCAPE + NUL_SYMBOL, ESCAPE: ESCAPE + ESCAPE})
_FROM_STORED = {NUL_SYMBOL: NUL, ESCAPE + NUL_SYMBOL: NUL_SYMBOL, ESCAPE + ESCAPE: ESCAPE}
_STORED_ESCAPE = re.compile(f"{ESCAPE}[{ESCAPE}{NUL_SYMBOL}]|{NUL_SYMBOL}")
NUL_IN_NAME = "names and ids cannot hold NUL characters (U+0000)"


def text_to_stored(text: str) -> str:
    """Agent text as a column holds it (see the module's docstring)."""
    if NUL in text or NUL_SYMBOL in text or ESCAPE in text:
        return text.translate(_TO_STORED)
    return text


def text_from_stored(stored: str) -> str:
    """The inverse of text_to_stored. An escape followed by anything else (never written) is
    kept as it is."""
    if NUL_SYMBOL not in stored and ESCAPE not in stored:
        return stored
    return _STORED_ESCAPE.sub(lambda match: _FROM_STORED[match.group()], stored)


# django-stubs make fields generic; Django's own TextField takes no [...] at runtime.
class AgentTextField(models.TextField):  # type: ignore[type-arg]
    """Text as an agent sent it, any valid Unicode string, NUL included: stored escaped
    (text_to_stored) on both databases, read back unescaped, and searched escaped; its secrets
    redacted (before the escaping, as the agent's text)."""

    redacts = True

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return text_to_stored(value) if isinstance(value, str) else value

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        # A str, the usual value, needs nothing else of Django's preparation (a tenth of the
        # cost for the bulk inserts, which prepare every row's text: db.row_values).
        if type(value) is str:
            return text_to_stored(stored_text(value))
        if isinstance(value, str):
            value = stored_text(str(value))
        return super().get_db_prep_save(value, connection)

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> str | None:
        return None if value is None else text_from_stored(value)


# Django leaves a pattern's or a case-insensitive lookup's term unprepared; here it is escaped
# like the text it is matched against (escaping maps each character on its own, so a term
# found in a text is found in the stored text). A regex runs over the stored text as it is.
for _lookup in (lookups.Contains, lookups.IContains, lookups.StartsWith, lookups.IStartsWith,
                lookups.EndsWith, lookups.IEndsWith, lookups.IExact):
    AgentTextField.register_lookup(type(_lookup.__name__, (_lookup,), {"prepare_rhs": True}))


class JSONText(str):
    """JSON already serialized by the caller (who also needed its size): stored as it is."""


class OrderedJSONField(models.TextField):  # type: ignore[type-arg]  # as AgentTextField
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

    redacts = True

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        """The JSON text written, its strings' secrets redacted (the literals looked for in the
        text first, so a value without any is encoded once and scanned once)."""
        if value is None or hasattr(value, "resolve_expression"):
            return super().get_db_prep_save(value, connection)
        if isinstance(value, JSONText):
            return stored_json_text(str(value), _ENCODER.encode)
        text = _ENCODER.encode(value)
        redacted = stored_value(value, text)
        return text if redacted is value else _ENCODER.encode(redacted)

    def value_to_string(self, obj: models.Model) -> str:
        return self.get_prep_value(self.value_from_object(obj)) or "null"

    def formfield(self, **kwargs: Any) -> forms.Field:
        # The API's JSON rules (depth, repeated keys, surrogates, NUL) hold in forms too.
        return forms.JSONField(**{"required": not self.blank, "decoder": StrictJSONDecoder, **kwargs})


class RedactedCharField(models.CharField):  # type: ignore[type-arg]  # as AgentTextField
    """A short text people or agents write (a title, a name, a label, a category): its secrets
    redacted when stored. A marker can be longer than the secret it replaces; the value is cut
    to max_length after, so the database never refuses it (the secret is gone either way)."""

    redacts = True

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        if isinstance(value, str):
            value = stored_text(str(value))
            if self.max_length is not None and len(value) > self.max_length:
                value = value[:self.max_length]
        return super().get_db_prep_save(value, connection)

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        return _redacted_on(self, model_instance, add)


class RedactedTextField(models.TextField):  # type: ignore[type-arg]  # as AgentTextField
    """A text people write (a comment), stored as it is (no NUL escaping: not agent text), its
    secrets redacted."""

    redacts = True

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        if isinstance(value, str):
            value = stored_text(str(value))
        return super().get_db_prep_save(value, connection)

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        return _redacted_on(self, model_instance, add)


def _redacted_on(field: Any, instance: models.Model, add: bool) -> Any:
    """A short text's value redacted on the instance too, as save() and bulk_create prepare it:
    what a service answers after writing it is what the row holds (a title, a comment). The
    big agent columns are redacted in get_db_prep_save only (once per append)."""
    value = models.Field.pre_save(field, instance, add)
    if isinstance(value, str) and value:
        redacted = stored_text(value)
        if field.max_length is not None and len(redacted) > field.max_length:
            redacted = redacted[:field.max_length]
        if redacted is not value:
            setattr(instance, field.attname, redacted)
            value = redacted
    return value


class RedactedJSONTextField(models.TextField):  # type: ignore[type-arg]  # as AgentTextField
    """JSON its writer serialized (documents.dumps: a state revision's snapshot or patch), kept
    as a plain text column; its strings' secrets redacted as OrderedJSONField's (the text
    parsed and written again only when a secret's literal is in it)."""

    redacts = True
    patch = False  # RedactedPatchField: RFC 6902 operations, only their values redacted

    def get_db_prep_save(self, value: Any, connection: Any) -> Any:
        if isinstance(value, str):
            value = stored_json_text(str(value), _ENCODER.encode, patch=self.patch)
        return super().get_db_prep_save(value, connection)


class RedactedPatchField(RedactedJSONTextField):
    """RFC 6902 operations as JSON text (a state revision's patch): each operation's `value`
    redacted as a document's values are; paths name the document's keys, which are kept."""

    patch = True
