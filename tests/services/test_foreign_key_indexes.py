"""Deleting a row makes the database look up every row that points at it (the foreign key's
check, on PostgreSQL and SQLite alike), and a join by a foreign key looks rows up by it. A
pointer into the events table without an index it can use made deleting a thread's n events
scan the table n times: 5,000 events took 3.4 s to delete on SQLite, 0.1 s with the index.

Most foreign keys have no index of their own (the old migrations 0033 and 0034 dropped the ones a
composite index or unique constraint already leads with): these tests hold every one of them to
an index that leads with its column and that a lookup by it uses."""

from django.apps import apps
from django.db import connection
from django.db.models import ForeignKey

from contextstore.models import Event


def foreign_keys() -> list[ForeignKey]:
    """Every foreign key (one-to-one included) of our models, from their meta."""
    return [field for model in apps.get_app_config("contextstore").get_models()
            for field in model._meta.local_fields if isinstance(field, ForeignKey)]


def pointers_into_events() -> list[tuple[str, str]]:
    return [(field.model._meta.db_table, field.column) for field in foreign_keys()
            if field.related_model is Event]


def leading_indexes(table: str, column: str) -> set[str]:
    """The indexes and unique constraints of `table` whose first column is `column`, as the
    database itself describes them."""
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, table)
    return {name for name, info in found.items()
            if (info["index"] or info["unique"] or info["primary_key"]) and info["columns"][:1] == [column]}


def lookup_plan(table: str, column: str, value: str = "1") -> str:
    query = f'SELECT 1 FROM "{table}" WHERE "{column}" = {value}'
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")  # tiny tables: ask whether one exists
            cursor.execute(f"EXPLAIN {query}")
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {query}")
        return " ".join(str(part) for row in cursor.fetchall() for part in row)


def test_every_pointer_into_the_events_table_is_found_by_an_index(db):
    pointers = pointers_into_events()
    assert ("contextstore_event", "replaced_by_id") in pointers and len(pointers) >= 3
    for table, column in pointers:
        plan = lookup_plan(table, column)
        assert "Index" in plan or ("USING" in plan and "INDEX" in plan), (table, column, plan)


def test_every_foreign_key_column_leads_an_index(db):
    fields = foreign_keys()
    assert len(fields) >= 68
    unindexed = [f"{field.model.__name__}.{field.name}" for field in fields
                 if not leading_indexes(field.model._meta.db_table, field.column)]
    assert unindexed == []


def searches_by_leading_index(plan: str, table: str, column: str) -> bool:
    """PostgreSQL's plan names the index it scans; SQLite's names its own for a unique
    constraint (sqlite_autoindex_...), but SEARCH with `(column=?)` is a lookup by the index's
    first column (a scan of a whole index would say SCAN)."""
    if connection.vendor == "postgresql":
        return any(f" {name} " in f"{plan} " for name in leading_indexes(table, column))
    return " SEARCH " in f" {plan}" and (f"({column}=?" in plan or "PRIMARY KEY" in plan)


def test_a_lookup_by_any_foreign_key_uses_an_index_that_leads_with_it(db):
    """A leading index the lookup cannot use (a partial one whose condition `column = x` does not
    imply) would pass the test above."""
    missed = []
    for field in foreign_keys():
        table = field.model._meta.db_table
        uuid = field.target_field.get_internal_type() == "UUIDField"  # a job's id
        plan = lookup_plan(table, field.column, "'00000000000000000000000000000001'" if uuid else "1")
        if not searches_by_leading_index(plan, table, field.column):
            missed.append((f"{field.model.__name__}.{field.name}", plan))
    assert missed == []
