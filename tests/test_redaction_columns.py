"""Redaction by construction: every text and JSON column of every model redacts at the storage
boundary (its field class, contextstore/fields.py) or is exempt with a stated reason
(redaction.EXEMPT_COLUMNS / EXEMPT_APPS); docs/security.md's table is this list; every raw SQL
write of the server prepares its values through the same fields (or says why it needs not)."""

import json
import re
from pathlib import Path

import pytest
from django.apps import apps
from django.db import connection, models

from contextstore import db, redaction
from contextstore.models import Event, RenderRecord, Score, Thread
from tests.redaction_corpus import NEAR_MISSES, corpus

ROOT = Path(__file__).resolve().parent.parent
SECURITY = ROOT / "docs" / "security.md"
BEGIN, END = "<!-- redaction-columns:begin -->", "<!-- redaction-columns:end -->"
OPENAI = "sk-proj-" + "Zx9_Qw8-Er7Ty6Ui5" * 3

# Every file of the server that writes with SQL of its own (INSERT, UPDATE, COPY), and why what it
# writes is redacted.
RAW_WRITES = {
    "contextstore/db.py": "prepares every value with its field's get_db_prep_save (row_values, "
                          "_prepared, the ORM's own INSERT compiler)",
    "contextstore/services/renders.py": "a render record's spec and actor through their fields' "
                                        "get_db_prep_save; texts through db.insert_sql",
    "contextstore/services/search.py": "EventSearch.text, copied in SQL from the event's "
                                       "redacted columns",
    "contextstore/services/history.py": "CallFigure: numbers and a model name read in SQL from the "
                                        "event's stored (redacted) data",
    "contextstore/partitions.py": "rows moved between tables as they are stored",
    "contextstore/pgvector.py": "numbers alone: a stored vector's id and its floats",
    "contextstore/bench/api.py": "the benchmark's own rows and tables (manage.py bench_api)",
}
WRITE_SQL = re.compile(r"\bINSERT INTO\b|\bUPDATE\s+[\w\"{}.]+\s+SET\b|\bCOPY\s+[\w\"{}.]+\s*\(")


def text_columns() -> list[tuple[str, models.Field]]:
    return [(model._meta.app_label, field) for model in apps.get_models()
            for field in model._meta.concrete_fields
            if isinstance(field, (models.CharField, models.TextField, models.JSONField))]


def label(field: models.Field) -> str:
    return f"{field.model.__name__}.{field.name}"


def test_every_text_and_json_column_is_redacted_or_exempt_with_a_reason():
    neither = [label(f) for app, f in text_columns()
               if app not in redaction.EXEMPT_APPS and not getattr(f, "redacts", False)
               and label(f) not in redaction.EXEMPT_COLUMNS]
    assert neither == [], "redact these (a Redacted* field) or add them to EXEMPT_COLUMNS with why"
    contextstore = {label(f): f for app, f in text_columns() if app == "contextstore"}
    stale = [name for name in redaction.EXEMPT_COLUMNS
             if name not in contextstore or getattr(contextstore[name], "redacts", False)]
    assert stale == [], "exempt columns that no longer exist or redact"
    assert all(reason.strip() for reason in redaction.EXEMPT_COLUMNS.values())


def columns_table() -> str:
    """The tables docs/security.md holds between its markers."""
    redacted: dict[str, list[str]] = {}
    for app, field in text_columns():
        if app == "contextstore" and getattr(field, "redacts", False):
            redacted.setdefault(field.model.__name__, []).append(f"`{field.name}`")
    lines = ["| model | redacted columns |", "|---|---|"]
    lines += [f"| {model} | {', '.join(names)} |" for model, names in redacted.items()]
    lines += ["", "| not redacted | why |", "|---|---|"]
    lines += [f"| `{name}` | {reason} |" for name, reason in redaction.EXEMPT_COLUMNS.items()]
    lines += [f"| Django's `{app}` tables | {reason} |" for app, reason in redaction.EXEMPT_APPS.items()]
    return "\n".join(lines)


def test_the_security_docs_list_exactly_these_columns():
    text = SECURITY.read_text()
    documented = text.split(BEGIN)[1].split(END)[0].strip()
    assert documented == columns_table(), f"docs/security.md between the markers:\n{columns_table()}"


def test_every_raw_sql_write_of_the_server_is_accounted_for():
    writers = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "contextstore").rglob("*.py")
                     if "migrations" not in path.parts and WRITE_SQL.search(path.read_text()))
    assert writers == sorted(RAW_WRITES)


@pytest.mark.django_db
def test_the_raw_write_paths_prepare_redacted_values(thread):
    event = Event(thread=thread, seq=1, position=1, type="Message", content=f"key {OPENAI}",
                  data={"args": {"token": OPENAI}, "id": "keep"}, occurred_at=thread.created_at)
    plan = db.row_plan(tuple(Event._meta.concrete_fields))
    values = db.row_values(event, plan)  # COPY's and insert_sql's rows
    assert not any(OPENAI in str(v) for v in values)
    text, params = db.row_update_sql(Thread, thread.pk, {"name": f"fork {OPENAI}"}, {})
    assert params[0] == "fork [REDACTED:openai_key]"
    spec = RenderRecord._meta.get_field("spec").get_db_prep_save({"note": OPENAI}, connection)
    assert OPENAI not in spec and "[REDACTED:openai_key]" in spec


@pytest.mark.django_db
def test_update_and_bulk_update_are_redacted_as_save_is(session, thread):
    Thread.objects.filter(pk=thread.pk).update(name=f"n {OPENAI}")
    score = Score.objects.create(workspace=session.workspace, session=session, name="q",
                                 data_type="categorical", string_value="a", comment=f"c {OPENAI}")
    assert score.comment == "c [REDACTED:openai_key]"  # the instance holds what the row holds
    score.comment = f"again {OPENAI}"
    Score.objects.bulk_update([score], ["comment"])
    assert Score.objects.get().comment == "again [REDACTED:openai_key]"
    assert Thread.objects.get(pk=thread.pk).name == "n [REDACTED:openai_key]"


@pytest.mark.django_db
def test_the_boundary_alone_redacts_the_corpus_as_the_services_do_and_keeps_near_misses():
    """A value no service redacted (a caller of the ORM itself) is redacted at the boundary the
    same way: every corpus secret becomes its marker, every near-miss (and NUL) is kept."""
    rules = redaction.boundary_rules()
    content = Event._meta.get_field("content")
    data = Event._meta.get_field("data")
    for kind, text, secret in corpus():
        assert content.get_db_prep_save(text, connection) == redaction.redact(rules, text)[0], kind
        assert secret not in data.get_db_prep_save({"a": [text]}, connection), kind
    for text in NEAR_MISSES:
        assert content.from_db_value(content.get_db_prep_save(f"{text}\x00", connection), None,
                                     connection) == f"{text}\x00"
        assert data.get_db_prep_save({"a": text}, connection) == json.dumps(
            {"a": text}, ensure_ascii=False)
