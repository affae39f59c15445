"""RetrievedEntry.entry loses its single-column index: the (entry, created_at) index of 0004 serves every
lookup by entry, and each retrieval writes up to k rows, each of which had to update both."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ('curation', '0012_skills'),
    ]

    operations = [
        migrations.AlterField(
            model_name='retrievedentry',
            name='entry',
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name='retrievals',
                to='curation.entry',
            ),
        ),
    ]
