"""The (run, seq) and (collapse) indexes of events cover only rows that have a run or collapse.
Most events have neither, yet every insert wrote a NULL entry into both: 30 bytes a row (3.9 MB
of the two indexes' 4 MB after 135k events), and about 5 % of a 100-event insert's time. Every
query that uses them asks for `run_id = x` or `collapse_id = x` (a join, a filter, the ORM's
SET NULL on delete), which implies IS NOT NULL, so PostgreSQL and SQLite still pick them.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('contextstore', '0013_event_json_search_partial'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='event',
            name='event_run',
        ),
        migrations.RemoveIndex(
            model_name='event',
            name='event_collapse',
        ),
        migrations.AddIndex(
            model_name='event',
            index=models.Index(condition=models.Q(('run__isnull', False)), fields=['run', 'seq'], name='event_run'),
        ),
        migrations.AddIndex(
            model_name='event',
            index=models.Index(condition=models.Q(('collapse__isnull', False)), fields=['collapse'], name='event_collapse'),
        ),
    ]
