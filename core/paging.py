"""A paginator for the admin's lists of tables that grow without bound (generations, the
ledger): it counts the rows a list shows up to a bound and, past it, takes PostgreSQL's
planner estimate, so no page of the admin counts ten million rows."""

from __future__ import annotations

import json
from typing import Any

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.utils.functional import cached_property

COUNT_BOUND = 10_000


def bounded_count(rows: QuerySet[Any], bound: int) -> int:
    """How many rows there are, counting no further than `bound`."""
    return rows.order_by()[:bound].count()


def planner_estimate(rows: QuerySet[Any]) -> int | None:
    """PostgreSQL's estimate of how many rows the query returns; None on other databases."""
    connection = connections[rows.db]
    if connection.vendor != "postgresql":
        return None
    sql, params = rows.order_by().query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return int(plan[0]["Plan"]["Plan Rows"])


class EstimatedCountPaginator(Paginator[Any]):
    """Counts exactly up to COUNT_BOUND rows; beyond, the planner's estimate (at least the
    bound): page links stay right for small lists and close for huge ones. Elsewhere than on
    PostgreSQL (an embedded SQLite deployment, small by nature) it counts."""

    @cached_property
    def count(self) -> int:
        rows = self.object_list
        if not isinstance(rows, QuerySet):
            return len(rows)
        counted = bounded_count(rows, COUNT_BOUND)
        if counted < COUNT_BOUND:
            return counted
        estimate = planner_estimate(rows)
        return rows.count() if estimate is None else max(counted, estimate)
