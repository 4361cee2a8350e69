"""A SQL SELECT over one dataset, parsed and checked: the subset ``LanceDataset.sql`` runs.

pylance runs ``ds.sql(...)`` with DataFusion, whose SQL differs from lance's filter strings: double
quotes name columns (single quotes make strings), unquoted names are lower-cased, ``ORDER BY`` puts
nulls last ascending and first descending.  ``parse_select`` reads a query in that dialect (sqlglot,
lancelot/sql/parse.py's dialect changed in those ways) and returns its parts with every column
reference normalised (its table qualifier dropped, its name as DataFusion resolves it), ready for
lancelot/sql's translator.  The subset: one SELECT of the dataset (columns, ``*``, expressions,
aliases, WHERE, GROUP BY, HAVING, ORDER BY, LIMIT/OFFSET, DISTINCT, the aggregates count / sum / min /
max / avg / stddev / var / median / approx_distinct / bool_and / bool_or, DISTINCT and FILTER of
them); anything else (joins, subqueries, window functions, set operations) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, TokenError

from lancelot.sql.errors import SqlError
from lancelot.sql.parse import LanceDialect, syntax_error

#: the aggregate functions the subset runs (``mean`` is DataFusion's other name for ``avg``)
AGGREGATES = frozenset(
    {
        *("count", "sum", "min", "max", "avg", "mean", "median", "approx_distinct", "bool_and", "bool_or"),
        *("stddev", "stddev_samp", "stddev_pop", "var", "var_samp", "var_pop"),
    }
)
#: DataFusion's other aggregate functions: refused as outside the subset (not as unknown functions)
_OTHER_AGGREGATES = frozenset(
    {
        *("approx_median", "approx_percentile_cont", "array_agg", "string_agg", "corr"),
        *("first_value", "last_value", "nth_value", "bit_and", "bit_or", "bit_xor"),
        *("covar", "covar_pop", "covar_samp", "grouping", "percentile_cont", "regr_slope", "regr_intercept"),
    }
)
#: the parts of a sqlglot Select the subset reads; any other part set is refused
_READ = frozenset({"expressions", "from_", "where", "group", "having", "order", "limit", "offset", "distinct"})
#: nodes outside the subset, wherever they occur
_REFUSED: dict[type[exp.Expr], str] = {
    exp.Join: "joins",
    exp.Subquery: "subqueries",
    exp.Window: "window functions",
    exp.Lateral: "LATERAL",
    exp.Unnest: "UNNEST",
    exp.With: "WITH (common table expressions)",
}


class SqlQueryError(SqlError, OSError):
    """A SQL query that cannot run: pylance raises ValueError from ``to_batch_records`` and OSError from
    ``to_stream_reader`` for the same query; this is both."""

    __str__ = BaseException.__str__  # the message, not "[Errno None] ..."


class UnsupportedQueryError(SqlQueryError):
    """A SQL query outside the subset lancelot runs (a join, a subquery, a window function, a set operation...)."""


class QueryDialect(LanceDialect):
    """DataFusion's SQL as pylance's ``sql`` reads it: ``"x"`` and ```x``` name columns, ``'x'`` is a string."""

    NULL_ORDERING = "nulls_are_large"  # ASC NULLS LAST, DESC NULLS FIRST unless the query says

    class Tokenizer(LanceDialect.Tokenizer):
        QUOTES = ["'"]
        IDENTIFIERS = ['"', "`"]

    class Parser(LanceDialect.Parser):
        pass


_DIALECT = QueryDialect()


@dataclass
class Select:
    """The parts of one SELECT, column references normalised (see the module's docstring)."""

    sql: str
    #: the name output columns are qualified with (the FROM table's alias, else its name); None without FROM
    qualifier: str | None
    #: (output name, expression), ``*`` expanded
    items: list[tuple[str, exp.Expr]]
    where: exp.Expr | None
    #: the GROUP BY expressions (aliases and positions replaced by their expressions); None without GROUP BY
    group: list[exp.Expr] | None
    having: exp.Expr | None
    #: (expression, descending, nulls first)
    order: list[tuple[exp.Expr, bool, bool]] = field(default_factory=list)
    limit: int | None = None
    offset: int = 0
    distinct: bool = False

    def is_aggregate(self) -> bool:
        """Whether the query groups rows: a GROUP BY, or an aggregate in its output, HAVING or ORDER BY."""
        trees = [e for _, e in self.items] + [e for e, _, _ in self.order] + [self.having]
        return self.group is not None or any(is_aggregate(n) for t in trees if t is not None for n in t.walk())


def is_aggregate(node: exp.Expr) -> bool:
    """Whether ``node`` is a call of an aggregate function."""
    return isinstance(node, exp.Anonymous) and str(node.name).lower() in AGGREGATES


def aggregate_call(node: exp.Expr) -> exp.Expr:
    """The whole call an aggregate ``node`` is part of: its ``FILTER (WHERE ...)`` when it has one."""
    return node.parent if isinstance(node.parent, exp.Filter) else node


def _parse(sql: str) -> exp.Expr:
    if not isinstance(sql, str):
        raise TypeError(f"a SQL query must be a str, not {type(sql).__name__}")
    try:
        trees = [t for t in sqlglot.parse(sql, dialect=_DIALECT, error_level=ErrorLevel.IMMEDIATE) if t is not None]
    except (ParseError, TokenError) as e:
        raise syntax_error(sql, "query", e) from None
    if len(trees) != 1:
        raise SqlError(f"the SQL query {sql!r} must be one statement (it has {len(trees)})")
    return trees[0]


def _refuse(sql: str, what: str) -> UnsupportedQueryError:
    return UnsupportedQueryError(f"lancelot's LanceDataset.sql does not run {what} (in {sql!r})")


def _check(sql: str, tree: exp.Expr) -> exp.Select:
    if isinstance(tree, exp.SetOperation):
        raise _refuse(sql, f"{type(tree).__name__.upper()} (set operations)")
    if not isinstance(tree, exp.Query | exp.DML | exp.DDL | exp.Command):
        raise SqlQueryError(f"SQL error: expected an SQL statement, found {tree.sql()!r} (in {sql!r})")
    if not isinstance(tree, exp.Select):
        raise _refuse(sql, f"statements other than SELECT ({type(tree).__name__})")
    for name, value in tree.args.items():
        if value not in (None, [], False) and name not in _READ:
            raise _refuse(sql, "joins" if name == "joins" else f"the {name.rstrip('_').upper()} clause")
    for node in tree.walk():
        kind = next((w for t, w in _REFUSED.items() if isinstance(node, t)), None)
        if kind is None and isinstance(node, exp.Query) and node is not tree:
            kind = "subqueries"
        if kind is None and isinstance(node, exp.Anonymous) and str(node.name).lower() in _OTHER_AGGREGATES:
            kind = f"the aggregate {str(node.name).lower()}"
        if kind is None and is_aggregate(node) and any(is_aggregate(a) for a in _ancestors(node)):
            kind = "aggregates of aggregates"
        if kind is not None:
            raise _refuse(sql, kind)
        if isinstance(node, exp.Filter) and not is_aggregate(node.this):
            raise SqlQueryError(f"Error during planning: FILTER applies to aggregate functions only: {node.sql()}")
    return tree


def _ancestors(node: exp.Expr) -> list[exp.Expr]:
    out, p = [], node.parent
    while p is not None:
        out.append(p)
        p = p.parent
    return out


def _ident(node: exp.Expr | None) -> str:
    """An identifier as DataFusion resolves it: unquoted names are lower-cased."""
    if not isinstance(node, exp.Identifier):
        return "" if node is None else str(node.name)
    return str(node.this) if node.quoted else str(node.this).lower()


def _from(sql: str, tree: exp.Select, table_name: str) -> tuple[str | None, set[str]]:
    """The qualifier output names use and the qualifiers column references may carry."""
    src = tree.args.get("from_")
    if src is None:
        return None, set()
    table = src.this
    if not isinstance(table, exp.Table) or table.args.get("db") or table.args.get("catalog"):
        raise _refuse(sql, f"FROM {src.this.sql()} (only the dataset, by its table name)")
    name = _ident(table.this)
    if name != table_name:
        raise SqlQueryError(
            f"Error during planning: table 'datafusion.public.{name}' not found (the dataset's table name is "
            f"{table_name!r}: SqlQueryBuilder.table_name sets it)"
        )
    alias = _ident(table.args["alias"].this) if table.args.get("alias") else None
    return alias or name, {alias} if alias else {name}


def _normalise(sql: str, tree: exp.Select, qualifiers: set[str]) -> None:
    """Column references as names of the dataset's schema: qualifiers dropped, unquoted names lower-cased."""
    for col in list(tree.find_all(exp.Column)):
        qual = col.args.get("table")
        if qual is not None and not col.args.get("db") and _ident(qual) in qualifiers:
            col.set("table", None)
        for key in ("this", "table", "db"):
            part = col.args.get(key)
            if isinstance(part, exp.Identifier):
                col.set(key, exp.to_identifier(_ident(part), quoted=True))
    for alias in tree.find_all(exp.Alias):
        if isinstance(alias.args.get("alias"), exp.Identifier):
            alias.set("alias", exp.to_identifier(_ident(alias.args["alias"]), quoted=True))


def _count(sql: str, node: exp.Expr | None, what: str) -> int | None:
    if node is None:
        return None
    value = node.expression if isinstance(node, exp.Limit | exp.Offset) else node
    if not (isinstance(value, exp.Literal) and not value.is_string and str(value.this).isdigit()):
        raise SqlError(f"the {what} of the SQL query {sql!r} must be a non-negative integer, not {value.sql()}")
    return int(value.this)


def _items(sql: str, tree: exp.Select, qualifier: str | None, schema: pa.Schema) -> list[tuple[str, exp.Expr]]:
    from lancelot.dataset.sql_names import output_name

    items: list[tuple[str, exp.Expr]] = []
    for e in tree.expressions:
        if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
            if qualifier is None:
                raise SqlError(f"SELECT * with no table (in {sql!r})")
            items += [(n, exp.column(n, quoted=True)) for n in schema.names]
        elif isinstance(e, exp.Alias):
            items.append((_ident(e.args["alias"]), e.this))
        else:
            items.append((output_name(e, qualifier), e))
    names = [n for n, _ in items]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise SqlError(
            f"Error during planning: Projections require unique expression names but {dup!r} is the name "
            'of two; consider aliasing ("AS") one of them'
        )
    return items


def _resolve(node: exp.Expr, items: list[tuple[str, exp.Expr]], sql: str, what: str) -> exp.Expr:
    """A GROUP BY / ORDER BY term: a position (``1``) or an output alias stands for that output's expression."""
    if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit():
        k = int(node.this)
        if not 1 <= k <= len(items):
            raise SqlError(f"{what} position {k} is not in the select list (1..{len(items)}) of {sql!r}")
        return items[k - 1][1]
    if isinstance(node, exp.Column) and not node.args.get("table"):
        hit = [e for n, e in items if n == node.name]
        if len(hit) == 1:
            return hit[0]
    return node


def parse_select(sql: str, table_name: str, schema: pa.Schema) -> Select:
    """The SELECT ``sql`` over the dataset named ``table_name`` whose (scan) schema is ``schema``.

    Args:
        sql: The query, in DataFusion's SQL.
        table_name: The name FROM must give (pylance's default: ``dataset``).
        schema: The columns the query may read (the dataset's, with ``_rowid`` / ``_rowaddr`` when asked for).

    Returns:
        The query's parts.

    Raises:
        SqlError: A syntax error, another table, a bad LIMIT (a ``ValueError``, as pylance's).
        UnsupportedQueryError: A query outside the subset (a ``SqlError``).
    """
    tree = _check(sql, _parse(sql))
    qualifier, qualifiers = _from(sql, tree, table_name)
    _normalise(sql, tree, qualifiers)
    items = _items(sql, tree, qualifier, schema)
    group_node = tree.args.get("group")
    group = None
    if group_node is not None:
        if any(group_node.args.get(k) for k in ("grouping_sets", "cube", "rollup")):
            raise _refuse(sql, "GROUPING SETS / CUBE / ROLLUP")
        group = [_resolve(g, items, sql, "GROUP BY") for g in group_node.expressions]
    order = []
    for o in tree.args["order"].expressions if tree.args.get("order") else []:
        desc = bool(o.args.get("desc"))
        order.append((_resolve(o.this, items, sql, "ORDER BY"), desc, bool(o.args.get("nulls_first"))))
    where, having = tree.args.get("where"), tree.args.get("having")
    return Select(
        sql=sql,
        qualifier=qualifier,
        items=items,
        where=where.this if where is not None else None,
        group=group,
        having=having.this if having is not None else None,
        order=order,
        limit=_count(sql, tree.args.get("limit"), "LIMIT"),
        offset=_count(sql, tree.args.get("offset"), "OFFSET") or 0,
        distinct=tree.args.get("distinct") is not None,
    )
