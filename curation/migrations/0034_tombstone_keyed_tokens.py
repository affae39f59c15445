"""Tombstones keyed per install: the hashes of the forgotten text's distinctive tokens and the id of the
key they and the signature are hashed with. Existing tombstones get the key id "" (the fixed legacy key,
which they were written with): they cannot be re-keyed without the text, which is gone, so they keep
matching by fingerprint and signature under that key, and have no tokens."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("curation", "0033_skill_withdrawn")]

    operations = [
        migrations.AddField(model_name="tombstone", name="tokens", field=models.JSONField(blank=True, default=list)),
        migrations.AddField(
            model_name="tombstone", name="key_id", field=models.CharField(blank=True, default="", max_length=16)
        ),
    ]
