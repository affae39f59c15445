"""Near-duplicate band keys without a key constraint in the database: the write path writes them for entries
it has just inserted or holds locked, and Django's cascade removes them before an entry; the constraint's
check at commit was half of a batch's commit (~4,800 rows a batch of 500, ~20 of 40-60 ms). The index on the entry
stays (a rewrite of an entry's keys finds them through it). A TRUNCATE of the entries names this table now
(the benches'): no constraint leads its CASCADE here. Back: the constraint again."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0063_bands_of_active_entries"),
    ]

    operations = [
        migrations.AlterField(
            model_name="entryband",
            name="entry",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="curation.entry",
            ),
        ),
    ]
