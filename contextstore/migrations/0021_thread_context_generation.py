from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('contextstore', '0020_retention'),
    ]

    operations = [
        migrations.AddField(
            model_name='thread',
            name='context_generation',
            field=models.PositiveBigIntegerField(default=0),
        ),
    ]
