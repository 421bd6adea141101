"""Agent text holds any valid Unicode string, NUL included (contextstore.fields.AgentTextField).

The text columns of agent content now store a NUL as U+2400 (␀) and escape a literal ␀ or
U+241B (␛) with ␛. Rows written before may hold those two symbols as themselves (any character
but NUL was accepted), so they are escaped here, ␛ first, and read back exactly as before.
Only the fields' class changes, not the columns' type: state only (on SQLite an altered field
would copy its whole table).

Backwards, the rows are unescaped again; a row holding a NUL cannot go back (the previous
version refused NUL, and PostgreSQL's text cannot hold it), so the migration stops and says where.
"""

from django.db import migrations

from contextstore.fields import ESCAPE, NUL, NUL_SYMBOL, AgentTextField, text_from_stored

# (model, field, its options, table, primary key column)
TEXTS = (
    ("run", "error", {"blank": True, "default": ""}, "contextstore_run", "id"),
    ("clear", "summary", {"blank": True, "default": ""}, "contextstore_clear", "id"),
    ("event", "content", {"blank": True, "default": ""}, "contextstore_event", "id"),
    ("contextblock", "value", {"null": True, "blank": True}, "contextstore_contextblock", "id"),
    ("contextblock", "expr", {"null": True, "blank": True}, "contextstore_contextblock", "id"),
    ("contextblockversion", "value", {"null": True, "blank": True}, "contextstore_contextblockversion", "id"),
    ("contextblockversion", "expr", {"null": True, "blank": True}, "contextstore_contextblockversion", "id"),
    ("memory", "content", {}, "contextstore_memory", "id"),
    ("job", "error", {"blank": True, "default": ""}, "contextstore_job", "id"),
    ("storedtext", "text", {}, "contextstore_storedtext", "sha256"),
)


def _holding_symbols(column: str) -> str:
    return f"({column} LIKE %s OR {column} LIKE %s)"


SYMBOLS = [f"%{ESCAPE}%", f"%{NUL_SYMBOL}%"]


def escape_symbols(apps, schema_editor):
    for _, column, _, table, _ in TEXTS:
        schema_editor.execute(
            f"UPDATE {table} SET {column} = REPLACE(REPLACE({column}, %s, %s), %s, %s) "
            f"WHERE {_holding_symbols(column)}",
            [ESCAPE, ESCAPE + ESCAPE, NUL_SYMBOL, ESCAPE + NUL_SYMBOL, *SYMBOLS])


def unescape_symbols(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for _, column, _, table, pk in TEXTS:
            cursor.execute(f"SELECT {pk}, {column} FROM {table} WHERE {_holding_symbols(column)}", SYMBOLS)
            for key, stored in cursor.fetchall():
                text = text_from_stored(stored)
                if NUL in text:
                    raise RuntimeError(f"{table}.{column} of {pk} {key} holds a NUL character, which "
                                       "the previous version cannot store: delete it first.")
                cursor.execute(f"UPDATE {table} SET {column} = %s WHERE {pk} = %s", [text, key])


class Migration(migrations.Migration):
    dependencies = [("contextstore", "0015_event_replaced_by_partial")]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(model_name=model, name=name, field=AgentTextField(**options))
            for model, name, options, _, _ in TEXTS
        ]),
        migrations.RunPython(escape_symbols, unescape_symbols),
    ]
