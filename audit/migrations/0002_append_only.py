"""The audit trail is append-only on PostgreSQL: a trigger refuses every UPDATE, and every
DELETE but the retention's purge (audit/retention.py), which names in its transaction's
`momor.audit_purge_before` a moment at least a day old and deletes only rows older than it.
SQLite (embedded mode) has no such trigger."""

from collections.abc import Callable
from typing import Any

from django.db import migrations

CREATE = """
CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    purge_before timestamptz := NULLIF(current_setting('momor.audit_purge_before', true), '');
BEGIN
    IF TG_OP = 'DELETE' AND purge_before IS NOT NULL
       AND purge_before <= now() - interval '1 day' AND OLD.at < purge_before THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the audit trail is append-only: % of audit event % refused', TG_OP, OLD.id
        USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_append_only();
"""

DROP = """
DROP TRIGGER audit_append_only ON audit_auditevent;
DROP FUNCTION audit_append_only();
"""


def _on_postgresql(sql: str) -> Callable[[Any, Any], None]:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [migrations.RunPython(_on_postgresql(CREATE), _on_postgresql(DROP))]
