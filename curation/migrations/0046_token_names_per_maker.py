"""An agent token's name is unique per maker (and among the operator's), no longer across the install: the
service refuses a name only when the maker can see a token with it. Existing rows were unique by name
across the install, so they already satisfy both constraints and nothing is rewritten."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('curation', '0039_injection_quarantine'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='agenttoken',
            name='name',
            field=models.CharField(max_length=100),
        ),
        migrations.AddConstraint(
            model_name='agenttoken',
            constraint=models.UniqueConstraint(fields=('created_by', 'name'), name='agent_token_name_once_per_maker'),
        ),
        migrations.AddConstraint(
            model_name='agenttoken',
            constraint=models.UniqueConstraint(condition=models.Q(('created_by__isnull', True)), fields=('name',), name='agent_token_name_once_by_operator'),
        ),
    ]
