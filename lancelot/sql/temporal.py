"""Date and time functions of pylance's SQL (DataFusion's names) as pyarrow compute calls.

``now()`` and ``current_date()`` are read once, when the filter is parsed (DataFusion fixes them
when it plans the query), and ``to_timestamp`` takes a literal.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelot.sql.arguments import arity
from lancelot.sql.values import Val, const_val, sql_text
from lancelot.util.types import is_string_like

if TYPE_CHECKING:
    from lancelot.sql.translate import Translator

#: date_part's part -> (pyarrow kernel, its options)
_PARTS: dict[str, tuple[str, object]] = {
    "year": ("year", None),
    "quarter": ("quarter", None),
    "month": ("month", None),
    "week": ("iso_week", None),
    "day": ("day", None),
    "hour": ("hour", None),
    "minute": ("minute", None),
    "second": ("second", None),
    "millisecond": ("millisecond", None),
    "microsecond": ("microsecond", None),
    "nanosecond": ("nanosecond", None),
    "dow": ("day_of_week", pc.DayOfWeekOptions(count_from_zero=True, week_start=7)),
    "doy": ("day_of_year", None),
}
_TRUNC_UNITS = {"year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond", "microsecond"}


def _temporal_arg(t: Translator, node: exp.Expr, v: Val) -> Val:
    if not (pa.types.is_date(v.type) or pa.types.is_timestamp(v.type) or pa.types.is_time(v.type)):
        raise t.error(f"{node.name} needs a date or a timestamp, not {v.type}", node)
    return v


def _part_name(t: Translator, node: exp.Expr, v: Val, choices: Collection[str]) -> str:
    if v.const is None or not is_string_like(v.type) or not v.const.is_valid:
        raise t.error(f"the first argument of {node.name} must be a string literal", node)
    part = str(v.const.as_py()).lower()
    if part not in choices:
        raise t.error(f"unsupported part {part!r} (one of {', '.join(sorted(choices))})", node)
    return part


def date_part(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 2)
    part = _part_name(t, node, args[0], {*_PARTS, "epoch"})
    x = _temporal_arg(t, node, args[1])
    if part == "epoch":  # seconds since 1970, a double
        return _seconds(t, node, x, pa.float64())
    kernel, options = _PARTS[part]
    return t.cast(t.call(kernel, [x], node, options), pa.int32(), node)


def date_trunc(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    arity(t, node, args, 2)
    unit = _part_name(t, node, args[0], _TRUNC_UNITS)
    x = _temporal_arg(t, node, args[1])
    if pa.types.is_date(x.type):  # DataFusion truncates a date as a timestamp[ns]
        x = t.cast(x, pa.timestamp("ns"), node)
    options = pc.RoundTemporalOptions(1, unit, week_starts_monday=True)
    return t.call("floor_temporal", [x], node, options)


def now(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    if args:
        raise t.error(f"{node.name} takes no arguments", node)
    stamp = _dt.datetime.now(_dt.timezone.utc)
    return const_val(pa.scalar(stamp, pa.timestamp("us", "+00:00")).cast(pa.timestamp("ns", "+00:00")))


def current_date(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    if args:
        raise t.error(f"{node.name} takes no arguments", node)
    return const_val(pa.scalar(_dt.datetime.now(_dt.timezone.utc).date(), pa.date32()))


def to_timestamp(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    from lancelot.sql.casts import temporal_literal

    if len(args) != 1 or args[0].const is None or not is_string_like(args[0].type):
        raise t.error(f"{node.name} takes one string literal", node)
    text = args[0].const.as_py()
    if text is None:
        return const_val(pa.scalar(None, pa.timestamp("ns")))
    return const_val(temporal_literal(t, text, pa.timestamp("ns"), node))


_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _seconds(t: Translator, node: exp.Expr, x: Val, to: pa.DataType) -> Val:
    """The seconds since 1970 of a date or timestamp (its UTC instant), as a double or as an int64 (truncated
    towards zero, as arrow-rs casts a timestamp to seconds)."""
    if pa.types.is_date(x.type):
        days = t.cast(t.cast(x, pa.int32() if pa.types.is_date32(x.type) else pa.int64(), node), pa.int64(), node)
        if pa.types.is_date64(x.type):
            days = t.call("divide", [days, const_val(pa.scalar(86_400_000, pa.int64()))], node)
        return t.cast(t.call("multiply", [days, const_val(pa.scalar(86_400, pa.int64()))], node), to, node)
    if not pa.types.is_timestamp(x.type):
        raise t.error(f"{node.name} needs a date or a timestamp, not {x.type}", node)
    ticks = Val(x.expr.cast(pa.int64()), pa.int64(), None if x.const is None else x.const.cast(pa.int64()))
    per = const_val(pa.scalar(_PER_SECOND[x.type.unit], pa.int64()))
    if pa.types.is_floating(to):
        return t.call("divide", [t.cast(ticks, to, node), t.cast(per, to, node)], node)
    return t.call("divide", [ticks, per], node)  # (Arrow's integer division truncates towards zero)


def to_unixtime(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """Seconds since 1970 of a date or timestamp, an int64."""
    arity(t, node, args, 1)
    if pa.types.is_integer(args[0].type):
        return t.cast(args[0], pa.int64(), node)
    return _seconds(t, node, args[0], pa.int64())


def from_unixtime(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """The timestamp (seconds, no zone) of seconds since 1970."""
    arity(t, node, args, 1)
    if not pa.types.is_integer(args[0].type):
        raise t.error(f"from_unixtime takes an integer, not {args[0].type}", node)
    return t.cast(t.cast(args[0], pa.int64(), node), pa.timestamp("s"), node)


#: the chrono format directives ``to_char`` takes (those Arrow's strftime writes alike)
_FORMATS = frozenset("YmdHMSybBaAjeFT%")


def to_char(t: Translator, node: exp.Expr, args: list[Val]) -> Val:
    """``to_char(x, format)`` / ``date_format``: a date or timestamp as text, in a literal chrono format of the
    directives both write alike (whole seconds: the time floored to the second first)."""
    from lancelot.sql.arguments import literal_str

    arity(t, node, args, 2)
    x = _temporal_arg(t, node, args[0])
    fmt = literal_str(t, args[1], node, "format")
    if set(re.findall(r"%(.?)", fmt.replace("%%", ""))) - _FORMATS:
        raise t.error(f"unsupported format {fmt!r} (directives: {' '.join('%' + c for c in sorted(_FORMATS))})", node)
    if pa.types.is_time(x.type) or (pa.types.is_timestamp(x.type) and x.type.tz not in (None, "UTC", "+00:00")):
        raise t.error(f"{node.name} of {x.type} is not supported", node)
    if pa.types.is_timestamp(x.type):  # (Arrow writes %S with the fraction of a finer unit)
        floored = t.call("floor_temporal", [x], node, pc.RoundTemporalOptions(1, "second"))
        seconds = pa.timestamp("s", x.type.tz)
        x = Val(floored.expr.cast(seconds), seconds)  # (exact: floored)
    return t.call("strftime", [x], node, pc.StrftimeOptions(fmt))


TEMPORAL_FUNCTIONS: dict[str, Callable[[Translator, exp.Expr, list[Val]], Val]] = {
    "to_char": to_char,
    "date_format": to_char,
    "to_unixtime": to_unixtime,
    "from_unixtime": from_unixtime,
    "date_part": date_part,
    "datepart": date_part,
    "date_trunc": date_trunc,
    "datetrunc": date_trunc,
    "now": now,
    "current_timestamp": now,
    "current_date": current_date,
    "today": current_date,
    "to_timestamp": to_timestamp,
}


_INTERVAL_UNITS = {
    "microsecond": 1,
    "millisecond": 1_000,
    "second": 1_000_000,
    "minute": 60_000_000,
    "hour": 3_600_000_000,
    "day": 86_400_000_000,
    "week": 7 * 86_400_000_000,
}

_MONTHS = {"month": 1, "mon": 1, "year": 12, "decade": 120, "century": 1200}


def interval(t: Translator, node: exp.Expr) -> Val:
    """``INTERVAL '1 day'`` / ``INTERVAL '90' MINUTE`` (only inside a function's arguments, as lance's
    planner takes it) as a duration in microseconds, or with months or years a month-day-nanosecond
    interval (calendar months, as arrow-rs adds them)."""
    import re

    if node.find_ancestor(exp.Anonymous) is None:
        raise t.error(f"Interval ({sql_text(node)}) is not supported in lance SQL", node)
    unit = node.args.get("unit")
    text = f"{node.this.name} {unit.name if unit is not None else ''}".lower()
    parts = re.findall(r"(-?\d+)\s*([a-z]+)", text)
    if not parts or re.sub(r"(-?\d+)\s*([a-z]+)", "", text).strip():
        raise t.error(f"cannot read the interval {sql_text(node)}", node)
    total = months = 0
    for count, name in parts:
        unit = name.rstrip("s")
        if unit in _MONTHS:
            months += int(count) * _MONTHS[unit]
            continue
        per = _INTERVAL_UNITS.get(unit)
        if per is None:
            raise t.error(f"unknown interval unit {name!r}", node)
        total += int(count) * per
    if months:  # calendar months: a month-day-nanosecond interval
        return const_val(pa.scalar((months, 0, total * 1000), pa.month_day_nano_interval()))
    return const_val(pa.scalar(total, pa.duration("us")))


def shift(t: Translator, fn: str, x: Val, d: Val, node: exp.Expr) -> Val:
    """A date or timestamp plus or minus a duration, in the time's own type (a date by whole days);
    an interval of months moves by calendar months first (the day clamped to the month's last)."""
    if pa.types.is_interval(d.type):
        from lancelot.sql.udfs import add_months

        if not (pa.types.is_date32(x.type) or pa.types.is_timestamp(x.type)) or d.const is None:
            raise t.error(f"cannot add an interval to {x.type}", node)
        months, _, nanos = d.const.as_py()
        sign = -1 if fn == "subtract" else 1
        x = t.call(add_months(x.type, sign * months), [x], node)
        if not nanos:
            return x
        d = const_val(pa.scalar(nanos // 1000, pa.duration("us")))
    if pa.types.is_date(x.type):
        days = d.const.as_py() if d.const is not None else None
        if days is None or days.microseconds or days.seconds:
            raise t.error("a date moves only by whole days in lancelot", node)
        moved = t.call(fn, [t.cast(x, pa.timestamp("us"), node), d], node)
        return t.cast(moved, x.type, node)
    if not pa.types.is_timestamp(x.type):
        raise t.error(f"cannot add an interval to {x.type}", node)
    return t.call(fn, [x, t.cast(d, pa.duration(x.type.unit), node)], node)
