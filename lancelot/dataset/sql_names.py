"""The names DataFusion gives unaliased output columns of a SQL query (what pylance's ``sql`` returns).

A column is its own name; an expression is written out with its columns qualified by the table
(``dataset.id + Int64(1)``, ``upper(dataset.value)``, ``count(*)``): literals as typed values
(``Int64(1)``, ``Float64(2.5)``, ``Utf8("a")``), operators between spaces and without parentheses,
calls lower-cased with their arguments joined by ``,``, casts as their operand.  An expression the
rules here do not cover is written as SQL.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

_OPERATORS: dict[type[exp.Expr], str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
    exp.And: "AND",
    exp.Or: "OR",
    exp.DPipe: "||",
    exp.NullSafeEQ: "IS NOT DISTINCT FROM",
    exp.NullSafeNEQ: "IS DISTINCT FROM",
}


def output_name(node: exp.Expr, qualifier: str | None) -> str:
    """The name of the output column ``node`` makes (a column: its name; else ``expr_name``)."""
    if isinstance(node, exp.Column):
        return str(node.name)
    return expr_name(node, qualifier)


def _number(text: str) -> str:
    try:
        return f"Int64({int(text)})"
    except ValueError:
        f = float(text)
        r = repr(f)
        return f"Float64({r[:-2] if r.endswith('.0') else r})"


def expr_name(node: exp.Expr, q: str | None) -> str:
    """``node`` written as DataFusion's schema name of an expression (columns qualified by ``q``)."""

    def n(e: exp.Expr) -> str:
        return expr_name(e, q)

    if isinstance(node, exp.Paren):
        return n(node.this)
    if isinstance(node, exp.Column):
        path = str(node.name)
        if node.args.get("table") is not None:
            path = f"{node.args['table'].name}.{path}"
        return f"{q}.{path}" if q else path
    if isinstance(node, exp.Null):
        return "NULL"
    if isinstance(node, exp.Boolean):
        return f"Boolean({'true' if node.this else 'false'})"
    if isinstance(node, exp.Literal):
        return f'Utf8("{node.this}")' if node.is_string else _number(str(node.this))
    if isinstance(node, exp.Neg):
        inner = node.this
        if isinstance(inner, exp.Literal) and not inner.is_string:
            return _number("-" + str(inner.this))
        return f"(- {n(inner)})"
    op = _OPERATORS.get(type(node))
    if op is not None:
        return f"{n(node.this)} {op} {n(node.expression)}"
    if isinstance(node, exp.Not):
        inner = node.this
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            return f"{n(inner.this)} IS NOT NULL"
        if isinstance(inner, exp.Like | exp.ILike | exp.In | exp.Between):
            head, _, tail = _infix(inner, n).partition(" ")
            return f"{head} NOT {tail}"
        return f"NOT {n(inner)}"
    if isinstance(node, exp.Like | exp.ILike | exp.In | exp.Between | exp.Is):
        return _infix(node, n)
    if isinstance(node, exp.Cast | exp.TryCast):
        return n(node.this)
    if isinstance(node, exp.Case):
        operand = f" {n(node.this)}" if node.this is not None else ""
        whens = "".join(f" WHEN {n(w.this)} THEN {n(w.args['true'])}" for w in node.args.get("ifs") or [])
        default = f" ELSE {n(node.args['default'])}" if node.args.get("default") is not None else ""
        return f"CASE{operand}{whens}{default} END"
    if isinstance(node, exp.Interval):
        return _interval(node)
    if isinstance(node, exp.Filter):
        return f"{n(node.this)} FILTER (WHERE {n(node.expression.this)})"
    call = _special_call(node)
    if call is not None:
        return f"{call[0]}({','.join(n(a) for a in call[1])})"
    if isinstance(node, exp.Anonymous):
        args = []
        for a in node.expressions:
            if isinstance(a, exp.Star):
                args.append("*")
            elif isinstance(a, exp.Distinct):
                args.append("DISTINCT " + ",".join(n(x) for x in a.expressions))
            else:
                args.append(n(a))
        return f"{str(node.name).lower()}({','.join(args)})"
    return node.sql()


def _special_call(node: exp.Expr) -> tuple[str, list[exp.Expr]] | None:
    """The function call DataFusion makes of SQL's special syntax (``SUBSTRING(s FROM 2)``, ``TRIM(LEADING 'a' FROM
    s)``, ``EXTRACT(YEAR FROM d)``, ``FLOOR(x)``): its name and arguments."""
    if isinstance(node, exp.Substring):
        return "substr", [a for a in (node.this, node.args.get("start"), node.args.get("length")) if a is not None]
    if isinstance(node, exp.Trim):
        position = str(node.args.get("position") or "").upper()
        name = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "btrim")
        return name, [a for a in (node.this, node.args.get("expression")) if a is not None]
    if isinstance(node, exp.Extract):
        return "date_part", [exp.Literal.string(str(node.this.name)), node.expression]
    if isinstance(node, exp.Floor | exp.Ceil):
        return type(node).__name__.lower(), [node.this]
    return None


#: an interval's units as DataFusion's IntervalMonthDayNano holds them: (field, per unit)
_INTERVAL_UNITS: dict[str, tuple[int, int]] = {
    **{u: (0, n) for u, n in (("month", 1), ("mon", 1), ("year", 12), ("decade", 120), ("century", 1200))},
    **{u: (1, n) for u, n in (("day", 1), ("week", 7))},
    **{u: (2, n) for u, n in (("hour", 3_600 * 10**9), ("minute", 60 * 10**9), ("second", 10**9))},
    **{u: (2, n) for u, n in (("millisecond", 10**6), ("microsecond", 10**3), ("nanosecond", 1))},
}


def _interval(node: exp.Interval) -> str:
    """``INTERVAL '1 day 3 hours'`` as DataFusion names the literal (its months, days and nanoseconds)."""
    import re

    unit = node.args.get("unit")
    text = f"{node.this.name} {unit.name if unit is not None else ''}".lower()
    parts = re.findall(r"(-?\d+)\s*([a-z]+)", text)
    fields = [0, 0, 0]
    for count, name in parts:
        field, per = _INTERVAL_UNITS.get(name.rstrip("s"), (-1, 0))
        if field < 0:
            return str(node.sql())
        fields[field] += int(count) * per
    if not parts or re.sub(r"(-?\d+)\s*([a-z]+)", "", text).strip():
        return str(node.sql())
    months, days, nanos = fields
    inner = f"IntervalMonthDayNano {{ months: {months}, days: {days}, nanoseconds: {nanos} }}"
    return f'IntervalMonthDayNano("{inner}")'


def _infix(node: exp.Expr, name: Callable[[exp.Expr], str]) -> str:
    """``x LIKE p``, ``x IN a, b``, ``x BETWEEN l AND h``, ``x IS NULL`` (``name`` names the operands)."""
    if isinstance(node, exp.In):
        return f"{name(node.this)} IN {', '.join(name(e) for e in node.expressions)}"
    if isinstance(node, exp.Between):
        return f"{name(node.this)} BETWEEN {name(node.args['low'])} AND {name(node.args['high'])}"
    if isinstance(node, exp.Is):
        return f"{name(node.this)} IS {name(node.expression)}"
    word = ("NOT " if node.args.get("negate") else "") + ("ILIKE" if isinstance(node, exp.ILike) else "LIKE")
    return f"{name(node.this)} {word} {name(node.expression)}"
