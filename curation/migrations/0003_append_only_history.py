"""On PostgreSQL, the database itself refuses UPDATE and DELETE on evidence and events: history that
cannot be rewritten by a stray queryset.update() or a shell session. (TRUNCATE, used by test flushes,
is not a row operation and is not affected.)"""

from django.db import migrations

TABLES = ("curation_evidence", "curation_event")

FUNCTION = """
CREATE OR REPLACE FUNCTION curation_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'curation: % on % is refused: evidence and events are append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(FUNCTION, params=None)
    for table in TABLES:
        schema_editor.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION curation_refuse_change()"
        )


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
    schema_editor.execute("DROP FUNCTION IF EXISTS curation_refuse_change()")


class Migration(migrations.Migration):
    dependencies = [("curation", "0002_roles")]

    operations = [migrations.RunPython(install, uninstall)]
