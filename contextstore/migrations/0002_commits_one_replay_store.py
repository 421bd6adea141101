"""One replay store for framework saves (services/commits.py): SyncUpload's rows join
CommitRecord, which keeps a save's staged parts (`parts`) and, once applied, its answer
(`response`, NULL while only staged).

A staged upload moves (its upload id as the batch id), so an upload in progress when this runs
is finished by its last part. The answers of applied uploads are not moved: they would answer
a replay for at most a day, and no request hash was kept to check a replay against; a last part
resent after this runs is applied again (its keyed items are no-ops) or refused as stale.
"""

from django.db import migrations

import contextstore.fields


def move_staged_uploads(apps, schema_editor):
    SyncUpload = apps.get_model("contextstore", "SyncUpload")
    CommitRecord = apps.get_model("contextstore", "CommitRecord")
    staged = SyncUpload.objects.filter(result__isnull=True).order_by("pk")
    for start in range(0, staged.count(), 500):
        rows = [CommitRecord(thread_id=u.thread_id, batch_id=u.upload_id, request_hash="",
                             response=None, parts=u.parts) for u in staged[start:start + 500]]
        CommitRecord.objects.bulk_create(rows, ignore_conflicts=True)
    # created_at is auto_now_add: keep each upload's own, so the prune sees its true age.
    for upload in staged.only("thread_id", "upload_id", "created_at").iterator(chunk_size=500):
        CommitRecord.objects.filter(thread_id=upload.thread_id, batch_id=upload.upload_id,
                                    response__isnull=True).update(created_at=upload.created_at)


class Migration(migrations.Migration):

    dependencies = [
        ('contextstore', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='commitrecord',
            name='parts',
            field=contextstore.fields.OrderedJSONField(default=dict),
        ),
        migrations.AlterField(
            model_name='commitrecord',
            name='response',
            field=contextstore.fields.OrderedJSONField(blank=True, null=True),
        ),
        migrations.RunPython(move_staged_uploads, migrations.RunPython.noop, elidable=True),
        migrations.DeleteModel(
            name='SyncUpload',
        ),
    ]
