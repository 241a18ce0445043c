"""Monthly partitions of the call records on PostgreSQL.

`billing_generation` and `billing_attempt` are partitioned by range of `created_at`, one
partition per calendar month (UTC) named `<table>_pYYYY_MM`, plus a default partition that
catches a row no month partition takes, so an insert never fails for want of one. Month
partitions are made ahead of time (on migrate, when a worker starts, when records are
seeded); retention drops whole months. SQLite keeps one plain table of each, and retention
deletes its old rows."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db import connection, migrations, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from billing.retention.dropped import dropped_keep, horizon_move

GENERATIONS = "billing_generation"
TABLES = (GENERATIONS, "billing_attempt")
MONTHS_AHEAD = 3


def partitioned(db: BaseDatabaseWrapper = connection) -> bool:
    return db.vendor == "postgresql"


def month_start(moment: date) -> date:
    return date(moment.year, moment.month, 1)


def next_month(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


def months(first: date, last: date) -> Iterator[date]:
    """Every month from the one holding `first` to the one holding `last`."""
    month = month_start(first)
    while month <= last:
        yield month
        month = next_month(month)


def partition_name(table: str, month: date) -> str:
    return f"{table}_p{month:%Y_%m}"


def _bound(month: date) -> str:
    return datetime(month.year, month.month, 1, tzinfo=UTC).isoformat()


def partitions_ensure(
    first: date | None = None, last: date | None = None, db: BaseDatabaseWrapper = connection
) -> list[str]:
    """Make the month partitions from `first`'s month (default: this month) to `last`'s
    (default: MONTHS_AHEAD months on) where missing; returns the names made."""
    if not partitioned(db):
        return []
    today = datetime.now(UTC).date()
    first = first or today
    last = last or today + timedelta(days=31 * MONTHS_AHEAD)
    made = []
    for table in TABLES:
        existing = set(partition_names(table, db))
        for month in months(first, last):
            if partition_name(table, month) not in existing:
                _partition_create(table, month, db)
                made.append(partition_name(table, month))
    return made


def partition_names(table: str, db: BaseDatabaseWrapper = connection) -> list[str]:
    with db.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass ORDER BY c.relname",
            [table],
        )
        return [name for (name,) in cursor.fetchall()]


def _partition_create(table: str, month: date, db: BaseDatabaseWrapper) -> None:
    """Create one month's partition; rows of that month the default partition caught are
    moved into it (PostgreSQL refuses the partition while they sit there)."""
    name, lower, upper = partition_name(table, month), _bound(month), _bound(next_month(month))
    default = f"{table}_default"
    with transaction.atomic(using=db.alias), db.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE")
        cursor.execute(
            f"CREATE TEMP TABLE moved ON COMMIT DROP AS WITH gone AS ("  # noqa: S608 - our tables' names, values bound
            f"DELETE FROM {default} WHERE created_at >= %s AND created_at < %s RETURNING *"
            ") SELECT * FROM gone",
            [lower, upper],
        )
        cursor.execute(
            f"CREATE TABLE {name} PARTITION OF {table} FOR VALUES FROM (%s) TO (%s)",
            [lower, upper],
        )
        cursor.execute(f"INSERT INTO {table} SELECT * FROM moved")  # noqa: S608 - our tables' names, no input
        cursor.execute("DROP TABLE moved")  # now: a caller's transaction may make another


@dataclass(frozen=True)
class Dropped:
    partitions: list[str]
    rows: int
    """Rows deleted one by one: from the default partition, or from SQLite's tables."""


def retention_apply(days: int, db: BaseDatabaseWrapper = connection) -> Dropped:
    """Drop the records of calls made more than `days` days ago: the month partitions wholly
    older than that, and older rows the default partition (or SQLite's table) holds. The
    ledger and the daily rollups are kept, and so are the dropped generations' request ids
    (`billing.retention.dropped`: a record delivered again is not stored twice)."""
    cutoff = datetime.now(UTC) - timedelta(days=days)
    dropped: list[str] = []
    rows = 0
    with transaction.atomic(using=db.alias), db.cursor() as cursor:
        for table in reversed(TABLES):  # attempts first
            if partitioned(db):
                dropped += _old_months_drop(cursor, table, cutoff, db)
            rest = f"{table}_default" if partitioned(db) else table
            if table == GENERATIONS:
                dropped_keep(cursor, rest, cutoff)
            cursor.execute(f"DELETE FROM {rest} WHERE created_at < %s", [cutoff])  # noqa: S608 - our tables' names, values bound
            rows += cursor.rowcount
        horizon_move(cutoff)
    return Dropped(dropped, rows)


def _old_months_drop(
    cursor: Any, table: str, cutoff: datetime, db: BaseDatabaseWrapper
) -> list[str]:
    months_of = {partition_name(table, month): month for month in _months_held(table, db)}
    old = [name for name, month in months_of.items() if _end_of(month) <= cutoff]
    for name in old:
        if table == GENERATIONS:
            dropped_keep(cursor, name)
        cursor.execute(f"DROP TABLE {name}")
    return old


def _months_held(table: str, db: BaseDatabaseWrapper) -> list[date]:
    """The months `table` has a partition of (its default partition aside)."""
    prefix = f"{table}_p"
    return [
        datetime.strptime(name.removeprefix(prefix), "%Y_%m").replace(tzinfo=UTC).date()
        for name in partition_names(table, db)
        if name.startswith(prefix)
    ]


def _end_of(month: date) -> datetime:
    end = next_month(month)
    return datetime(end.year, end.month, 1, tzinfo=UTC)


def table_partition(schema_editor: Any, table: str) -> None:
    """Turn a plain table into one partitioned by month of created_at, keeping its rows,
    columns, checks, foreign keys, unique constraints (which hold created_at) and indexes;
    the primary key becomes (id, created_at)."""
    cursor = schema_editor.connection.cursor()
    cursor.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = %s::regclass AND contype IN ('f', 'u')",
        [table],
    )
    constraints = cursor.fetchall()
    cursor.execute(
        "SELECT indexname, indexdef FROM pg_indexes "
        "WHERE schemaname = current_schema() AND tablename = %s",
        [table],
    )
    taken = {name for name, _ in constraints} | {f"{table}_pkey"}
    indexes = [sql for name, sql in cursor.fetchall() if name not in taken]
    old = f"{table}_unpartitioned"
    cursor.execute(f"ALTER TABLE {table} RENAME TO {old}")
    cursor.execute(
        f"CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
        "INCLUDING IDENTITY) PARTITION BY RANGE (created_at)"
    )
    cursor.execute(f"CREATE TABLE {table}_default PARTITION OF {table} DEFAULT")
    cursor.execute(f"SELECT min(created_at), max(created_at) FROM {old}")  # noqa: S608 - our tables' names, no input
    first, last = cursor.fetchone()
    _months_create(cursor, table, first, last)
    cursor.execute(f"INSERT INTO {table} OVERRIDING SYSTEM VALUE SELECT * FROM {old}")  # noqa: S608 - our tables' names, no input
    cursor.execute(f"DROP TABLE {old}")
    cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY (id, created_at)")
    for name, definition in constraints:
        cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}")
    for sql in indexes:
        cursor.execute(sql)
    cursor.execute(
        f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "  # noqa: S608 - our tables
        f"coalesce((SELECT max(id) FROM {table}), 0) + 1, false)"
    )


def _months_create(cursor: Any, table: str, first: datetime | None, last: datetime | None) -> None:
    today = datetime.now(UTC).date()
    start = min(first.astimezone(UTC).date(), today) if first else today
    end = max(last.astimezone(UTC).date(), today) if last else today
    for month in months(start, end + timedelta(days=31 * MONTHS_AHEAD)):
        cursor.execute(
            f"CREATE TABLE {partition_name(table, month)} PARTITION OF {table} "
            "FOR VALUES FROM (%s) TO (%s)",
            [_bound(month), _bound(next_month(month))],
        )


def partitioned_index_add(schema_editor: Any, model: Any, index: Any) -> None:
    """Add `index` to a table partitioned by month without holding its writes: made on the
    parent alone (invalid), built concurrently on each partition while calls are stored, and
    attached to the parent's one by one (valid once the last is). Month partitions made later
    get it from the parent. SQLite: a plain index."""
    connection = schema_editor.connection
    if not partitioned(connection):
        schema_editor.add_index(model, index)
        return
    table, quote = model._meta.db_table, schema_editor.quote_name
    parent = index.create_sql(model, schema_editor)
    parent.parts["table"] = f"ONLY {quote(table)}"
    schema_editor.execute(parent, params=None)
    for partition in partition_names(table, connection):
        name = f"{index.name}_{partition.removeprefix(table + '_')}"
        child = index.create_sql(model, schema_editor, concurrently=True)
        child.parts.update(table=quote(partition), name=f"IF NOT EXISTS {quote(name)}")
        schema_editor.execute(child, params=None)
        schema_editor.execute(f"ALTER INDEX {quote(index.name)} ATTACH PARTITION {quote(name)}")


class AddPartitionedIndex(migrations.AddIndex):
    """AddIndex made with `partitioned_index_add` (its migration must be non-atomic)."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            partitioned_index_add(schema_editor, model, self.index)
