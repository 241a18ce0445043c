"""Inserting a batch's rows. On PostgreSQL by COPY: Django's bulk insert prepares and quotes
every value in Python (most of a worker's CPU a record), where COPY takes the values as they
are, written by psycopg's C code. Ids are drawn from the table's sequence first and set on the
rows, as bulk_create sets them; elsewhere bulk_create does it all."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, TypeVar

import orjson
from django.db import connection
from django.db.models import DateTimeField, Field, JSONField, Model
from django.utils import timezone

M = TypeVar("M", bound=Model)
Read = Callable[[Model], Any]


def rows_insert(rows: Sequence[M]) -> Sequence[M]:
    """Insert rows of one model in the caller's transaction, their ids set; a row the database
    refuses fails them all (the database's error, as Django raises it)."""
    if not rows:
        return rows
    model = type(rows[0])
    if connection.vendor != "postgresql":
        return model._default_manager.bulk_create(rows)
    now = timezone.now()
    for name in _stamped(model):
        for row in rows:
            setattr(row, name, now)
    table = model._meta.db_table
    with connection.cursor() as cursor, connection.wrap_database_errors:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            [table, len(rows)],
        )
        for row, (pk,) in zip(rows, sorted(cursor.fetchall()), strict=True):
            row.pk = pk
        columns, readers = _layout(model)
        sql = f'COPY "{table}" ({columns}) FROM STDIN'
        with cursor.cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row([read(row) for read in readers])
    if connection.queries_logged:
        connection.queries_log.append({"sql": f"{sql} -- {len(rows)} rows", "time": "0"})
    return rows


@cache
def _stamped(model: type[Model]) -> tuple[str, ...]:
    """The fields set to the moment of the insert (`auto_now_add`, `auto_now`)."""
    return tuple(
        field.attname
        for field in model._meta.concrete_fields
        if isinstance(field, DateTimeField) and (field.auto_now or field.auto_now_add)
    )


@cache
def _layout(model: type[Model]) -> tuple[str, list[Read]]:
    """The COPY's column list and, in its order, how each column's value is read off a row."""
    fields = model._meta.concrete_fields
    columns = ", ".join(f'"{field.column}"' for field in fields)
    return columns, [_reader(field) for field in fields]


def _reader(field: Field[Any, Any]) -> Read:
    name = field.attname
    if isinstance(field, JSONField):
        # jsonb's text input; orjson refuses what the JSON field's encoder would refuse
        return lambda row: orjson.dumps(getattr(row, name)).decode()
    return lambda row: getattr(row, name)
