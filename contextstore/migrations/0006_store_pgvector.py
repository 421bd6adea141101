"""pgvector's column for the long-term store's vectors, where the database has the extension
(contextstore/pgvector.py); nothing changes on any other database."""

import numpy as np
from django.db import migrations, transaction

TABLE = "contextstore_storevector_pg"


def forwards(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is None:
            return
        try:
            with transaction.atomic(using=connection.alias):
                cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except Exception:  # noqa: BLE001 - no privilege to create it: keep the exact path
            return
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} (vector_id bigint PRIMARY KEY REFERENCES "
            "contextstore_storevector (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, "
            "embedding vector NOT NULL)")
        StoreVector = apps.get_model("contextstore", "StoreVector")
        rows = [(pk, "[" + ",".join(repr(float(x)) for x in np.frombuffer(bytes(data), dtype="<f4")) + "]")
                for pk, data in StoreVector.objects.values_list("pk", "data").iterator()]
        cursor.executemany(f"INSERT INTO {TABLE} (vector_id, embedding) VALUES (%s, %s::vector) "
                           "ON CONFLICT DO NOTHING", rows)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP TABLE IF EXISTS {TABLE}")


class Migration(migrations.Migration):
    dependencies = [("contextstore", "0005_call_figures")]
    operations = [migrations.RunPython(forwards, backwards)]
