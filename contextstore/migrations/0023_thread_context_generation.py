from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('contextstore', '0022_admin_scope'),
    ]

    operations = [
        migrations.AddField(
            model_name='thread',
            name='context_generation',
            field=models.PositiveBigIntegerField(default=0),
        ),
    ]
