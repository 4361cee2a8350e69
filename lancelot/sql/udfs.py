"""Element-wise functions pyarrow lacks, registered with pyarrow as scalar UDFs on first use: casts
to text as arrow-rs writes them (floats the shortest way, ``1e16`` / ``0.00001``, ``-0.0``, ``NaN``;
timestamps ``2020-01-01T12:30:00.600``, UTC ones with ``Z``), C's ``fmod`` for float ``%``,
``TRY_CAST`` (null where a cast fails), ``lpad``/``rpad`` with any fill.

Each is registered under a name holding its argument types and options, so an expression that
uses one can be evaluated anywhere in the process that parsed it.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import decimal
import math
import threading
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelot.util.arrays import from_numpy, to_numpy

_REGISTERED: set[str] = set()
_LOCK = threading.Lock()


def register(name: str, inputs: dict[str, pa.DataType], out: pa.DataType, impl: Callable[..., pa.Array]) -> str:
    """``impl`` (arrays or scalars in, an array of ``out`` out) as the pyarrow function ``name``."""
    with _LOCK:
        if name not in _REGISTERED:

            def udf(ctx: pc.UdfContext, *args: pa.Array | pa.Scalar) -> pa.Array:
                n = next((len(a) for a in args if isinstance(a, pa.Array)), ctx.batch_length)
                arrays = [a if isinstance(a, pa.Array) else pa.repeat(a, n) for a in args]  # bits kept (a NaN's sign)
                return impl(*arrays)

            doc = {"summary": name, "description": "lancelot SQL: " + name}
            pc.register_scalar_function(udf, name, doc, inputs, out)
            _REGISTERED.add(name)
    return name


# -- floats and timestamps as text ----------------------------------------------------------------


def float_text(x: float, single: bool = False) -> str:
    """``x`` as arrow-rs casts it to text: the shortest digits that read back (of a float32 when
    ``single``), positional for exponents -5..15 (a float32: -6..12; with ``.0`` when whole), else
    ``1.5e16``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return sign + "0.0"
    shortest = str(np.float32(abs(x))) if single else repr(abs(x))
    d = decimal.Decimal(shortest).normalize()
    _, digits_t, e = d.as_tuple()
    assert isinstance(e, int)
    digits = "".join(map(str, digits_t))
    k = len(digits) - 1 + e  # the exponent in scientific notation
    if (-6 <= k < 13) if single else (-5 <= k < 16):  # arrow-rs's bounds, narrower for a float32
        if e >= 0:
            return sign + digits + "0" * e + ".0"
        point = len(digits) + e
        if point > 0:
            return sign + digits[:point] + "." + digits[point:]
        return sign + "0." + "0" * (-point) + digits
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{k}"


def float_to_text(t: pa.DataType) -> str:
    single = pa.types.is_float32(t) or pa.types.is_float16(t)
    return rowwise("text", {"x": t}, pa.utf8(), lambda v: float_text(v, single))


def _stamp_text(t: pa.DataType) -> Callable[[pa.Array], pa.Array]:
    digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]

    def impl(a: pa.Array) -> pa.Array:
        ticks = a.cast(pa.int64()).to_pylist()
        per_second = 10**digits
        out: list[str | None] = []
        for v in ticks:
            if v is None:
                out.append(None)
                continue
            seconds, frac = divmod(v, per_second)
            text = (_dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=seconds)).isoformat()
            if frac:  # chrono's %.f: 3, 6 or 9 digits, as few as hold the fraction
                nanos = f"{frac * 10 ** (9 - digits):09d}"
                text += "." + (nanos[:3] if nanos[3:] == "000000" else nanos[:6] if nanos[6:] == "000" else nanos)
            if t.tz is not None:
                text += "Z" if t.tz in ("UTC", "+00:00", "Z") else t.tz
            out.append(text)
        return pa.array(out, pa.utf8())

    return impl


def timestamp_to_text(t: pa.DataType) -> str:
    return register(f"lancelot_text<{t}>", {"x": t}, pa.utf8(), _stamp_text(t))


# -- fmod, try_cast, pad -----------------------------------------------------------------------


def fmod(t: pa.DataType) -> str:
    """C's fmod (the remainder with the dividend's sign, exact), as Rust's ``%`` on floats."""

    def impl(a: pa.Array, b: pa.Array) -> pa.Array:
        x = a.to_numpy(zero_copy_only=False)
        y = b.to_numpy(zero_copy_only=False)
        with np.errstate(all="ignore"):
            r = np.fmod(x, y)
        mask = ~(a.is_valid().to_numpy(zero_copy_only=False) & b.is_valid().to_numpy(zero_copy_only=False))
        return pa.array(np.where(mask, 0, r).astype(t.to_pandas_dtype()), t, mask=mask)

    return register(f"lancelot_fmod<{t}>", {"a": t, "b": t}, t, impl)


def try_cast(src: pa.DataType, to: pa.DataType, cast: Callable[[pa.Array], pa.Array]) -> str:
    """``cast`` of the whole array, or of each value alone where that fails (null where it fails)."""

    def impl(a: pa.Array) -> pa.Array:
        try:
            return cast(a)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError, OverflowError):
            pass
        out = []
        for i in range(len(a)):
            try:
                out.append(cast(a.slice(i, 1))[0].as_py())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError, OverflowError):
                out.append(None)
        return pa.array(out, to)

    return register(f"lancelot_try_cast<{src}|{to}>", {"x": src}, to, impl)


def pad(left: bool, width: int, fill: str, t: pa.DataType) -> str:
    """DataFusion's lpad/rpad: cut to ``width`` characters, or fill with ``fill`` repeated (cut);
    an empty fill leaves a short string as it is."""

    def one(s: str) -> str:
        if len(s) >= width:
            return s[:width]
        if not fill:
            return s
        need = width - len(s)
        extra = (fill * (need // len(fill) + 1))[:need]
        return extra + s if left else s + extra

    return rowwise(f"{'lpad' if left else 'rpad'}_{width}_{fill!r}", {"s": t}, t, one)


def decimal_mod(a_type: pa.DataType, b_type: pa.DataType, out: pa.DataType) -> str:
    """The remainder of two decimals with the dividend's sign, exact (Python's Decimal ``%``); a
    zero divisor fails, as in DataFusion."""
    quantum = decimal.Decimal(1).scaleb(-out.scale)

    def impl(a: pa.Array, b: pa.Array) -> pa.Array:
        res: list[decimal.Decimal | None] = []
        with decimal.localcontext() as ctx:
            ctx.prec = 80
            for x, y in zip(a.to_pylist(), b.to_pylist()):
                if x is None or y is None:
                    res.append(None)
                elif y == 0:
                    raise pa.ArrowInvalid("Divide by zero")
                else:
                    res.append((x % y).quantize(quantum))
        return pa.array(res, out)

    return register(f"lancelot_decimal_mod<{a_type}|{b_type}|{out}>", {"a": a_type, "b": b_type}, out, impl)


# -- functions of one value at a time --------------------------------------------------------------


def rowwise(name: str, inputs: dict[str, pa.DataType], out: pa.DataType, fn: Callable[..., Any]) -> str:
    """``fn`` of the Python values of each row (null where any is null) as the function ``name``;
    a ValueError of ``fn`` fails the call, as DataFusion's kernels do."""

    def impl(*arrays: pa.Array) -> pa.Array:
        rows = zip(*(a.to_pylist() for a in arrays), strict=True)
        try:
            return pa.array([None if None in r else fn(*r) for r in rows], out)
        except ValueError as e:
            raise pa.ArrowInvalid(f"{name}: {e}") from None

    key = ",".join(str(t) for t in inputs.values())
    return register(f"lancelot_{name}<{key}|{out}>", inputs, out, impl)


def _exact_cbrt(v: float) -> float:
    """The cube root of a positive finite double, correctly rounded (exact arithmetic on the midpoints
    between neighbouring doubles)."""
    target = Fraction(v)
    y = float(np.cbrt(v))
    while True:
        up = math.nextafter(y, math.inf)
        if ((Fraction(y) + Fraction(up)) / 2) ** 3 < target:
            y = up
            continue
        down = math.nextafter(y, 0.0)
        if ((Fraction(y) + Fraction(down)) / 2) ** 3 > target:
            y = down
            continue
        return y


def cbrt64(x: np.ndarray) -> np.ndarray:
    """The cube root of doubles correctly rounded, as pylance computes it (the C library's ``cbrt``
    and numpy's are off by one in the last bit for about half of all inputs): numpy's root refined by
    a Newton step in extended precision, and exactly where the result lies near a rounding midpoint."""
    x = np.asarray(x, np.float64)
    ax = np.abs(x)
    ok = np.isfinite(x) & (ax > 0)  # NaN, infinities and zeros are their own roots
    out: np.ndarray = x.copy()
    a = ax[ok]
    y = np.cbrt(a)
    exact = np.ones(len(a), bool)
    if np.finfo(np.longdouble).nmant >= 63:  # an 80-bit (or wider) long double: refine, then check
        yl, al = y.astype(np.longdouble), a.astype(np.longdouble)
        yl = yl - (yl * yl * yl - al) / (3 * yl * yl)
        y = yl.astype(np.float64)
        frac = (yl - y.astype(np.longdouble)) / np.spacing(y).astype(np.longdouble)
        mantissa = y.view(np.uint64) & np.uint64((1 << 52) - 1)
        exact = (np.abs(np.abs(frac) - 0.5) < 2.0**-8) | (mantissa == 0)
    for i in np.flatnonzero(exact):
        y[i] = _exact_cbrt(float(a[i]))
    out[ok] = np.copysign(y, x[ok])
    return out


def cbrt(t: pa.DataType) -> str:
    """The real cube root (negative for a negative number), rounded to ``t`` as pylance's ``cbrt``."""

    def impl(a: pa.Array) -> pa.Array:
        x = a.to_numpy(zero_copy_only=False).astype(np.float64)
        root = cbrt64(x) if pa.types.is_float64(t) else np.cbrt(x)
        return pa.array(root.astype(t.to_pandas_dtype()), t, mask=a.is_null().to_numpy(zero_copy_only=False))

    return register(f"lancelot_cbrt<{t}>", {"x": t}, t, impl)


def sign_bit(t: pa.DataType) -> str:
    """Whether each float has its sign bit set: a NaN an operation makes on x86 (0/0, inf - inf, cos(inf))
    has it, and sorts below every number in IEEE total order, as DataFusion compares."""

    def impl(a: pa.Array) -> pa.Array:
        x = a.to_numpy(zero_copy_only=False)
        return pa.array(np.signbit(x), pa.bool_(), mask=a.is_null().to_numpy(zero_copy_only=False))

    return register(f"lancelot_sign_bit<{t}>", {"x": t}, pa.bool_(), impl)


def nan_placed(t: pa.DataType, above: bool) -> str:
    """Whether each float is a NaN that IEEE total order (DataFusion's comparisons) puts above every number
    (``above``), or below them (its sign bit set); False for numbers and nulls. One pass, none without NaN."""

    def impl(a: pa.Array) -> pa.Array:
        x = to_numpy(pc.fill_null(a, 0) if a.null_count else a)
        nan = np.isnan(x)
        if nan.any():
            nan &= np.signbit(x) != above
        return from_numpy(nan)

    return register(f"lancelot_nan_{'above' if above else 'below'}<{t}>", {"x": t}, pa.bool_(), impl)


# -- power ------------------------------------------------------------------------------------------


def _zero_to_negative(base: pa.Array, exponent: pa.Array) -> None:
    bad = pc.and_(pc.equal(base, 0), pc.less(exponent, 0))
    if pc.any(bad).as_py():
        raise pa.ArrowInvalid("Compute error: zero raised to a negative power is undefined")


def power_checked(t: pa.DataType) -> str:
    """DataFusion's float power: ``pow``, but zero to a negative power is an error."""

    def impl(base: pa.Array, exponent: pa.Array) -> pa.Array:
        _zero_to_negative(base, exponent)
        return pc.power(base, exponent)

    return register(f"lancelot_power_checked_{t}", {"base": t, "exponent": t}, t, impl)


def _decimals(unscaled: list[int | None], t: pa.DataType) -> pa.Array:
    """A decimal128 array of these unscaled values, unchecked against the precision (as arrow-rs
    leaves a kernel's result)."""
    data = b"".join((v or 0).to_bytes(16, "little", signed=True) for v in unscaled)
    valid = pa.array([v is not None for v in unscaled]).buffers()[1]
    return pa.Array.from_buffers(t, len(unscaled), [valid, pa.py_buffer(data)])


def _round(x: float) -> int:
    """Rust's round: half away from zero."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def _powf_scaled(unscaled: int, scale: int, e: float) -> int:
    """The float fallback: the base as a double to the power ``e``, rounded back to the scale."""
    b = unscaled / 10.0**scale
    if b == 0 and e < 0:
        raise pa.ArrowInvalid("Compute error: zero raised to a negative power is undefined")
    try:
        r = math.pow(b, e)
    except (OverflowError, ValueError):
        r = math.nan
    if not math.isfinite(r):
        raise pa.ArrowInvalid(f"Arithmetic overflow: Result of {b:g}^{e:g} is not finite")
    scaled = r * 10.0**scale
    out = _round(scaled)
    if abs(out) >= 2**127:
        raise pa.ArrowInvalid(f"Arithmetic overflow: Result {scaled} is too large for the target decimal type")
    return out


def decimal_power(t: pa.DataType, e: float, integer: bool) -> str:
    """DataFusion's ``power(decimal, constant)``: a whole exponent >= 0 exactly (truncating to the
    scale, the precision unchecked), any other through a double, rounded; overflow is an error."""

    def one(unscaled: int) -> int:
        s = t.scale
        if integer or (math.isfinite(e) and e == math.trunc(e) and e >= 0):
            k = int(e)
            if k == 0:
                return int(10**s)
            if k > 0:
                powered = unscaled**k if abs(unscaled) < 2**127 and k * abs(unscaled).bit_length() <= 260 else None
                if powered is None or not -(2**127) <= powered < 2**127 or s * (k - 1) > 38:
                    raise pa.ArrowInvalid(f"Arithmetic overflow: Cannot raise base {unscaled} to exp {k}")
                q = int(abs(powered) // 10 ** (s * (k - 1)))  # Rust divides towards zero
                return q if powered >= 0 else -q
        if not math.isfinite(e):
            raise pa.ArrowInvalid(f"Compute error: Cannot use non-finite exp: {e}")
        return _powf_scaled(unscaled, t.scale, e)

    def impl(base: pa.Array) -> pa.Array:
        ints = [None if v is None else int(v.scaleb(t.scale)) for v in base.to_pylist()]
        return _decimals([None if v is None else one(v) for v in ints], t)

    return register(f"lancelot_decimal_power_{t}_{e!r}_{integer}", {"base": t}, t, impl)


def decimal_power_rows(t: pa.DataType) -> str:
    """DataFusion's ``power(decimal, column)``: through doubles, cast back to the decimal (null
    where it does not fit, or is not a number)."""

    def impl(base: pa.Array, exponent: pa.Array) -> pa.Array:
        b = base.cast(pa.float64())
        _zero_to_negative(b, exponent)
        out: list[decimal.Decimal | None] = []
        for x in pc.power(b, exponent).to_pylist():
            if x is None or not math.isfinite(x):
                out.append(None)
                continue
            q = _round(x * 10.0**t.scale)
            out.append(decimal.Decimal(q).scaleb(-t.scale) if abs(q) < 10**t.precision else None)
        return pa.array(out, t)

    return register(f"lancelot_decimal_power_rows_{t}", {"base": t, "exponent": pa.float64()}, t, impl)


# -- calendar months --------------------------------------------------------------------------------

_TICKS_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}
_EPOCH = _dt.date(1970, 1, 1)


def _plus_months(day: int, months: int) -> int:
    """Days since the epoch, moved by calendar months (the day clamped to the month's last, as
    chrono's ``checked_add_months``)."""
    d = _EPOCH + _dt.timedelta(days=day)
    k = d.year * 12 + d.month - 1 + months
    year, month = divmod(k, 12)
    if not 1 <= year <= 9999:
        raise pa.ArrowInvalid(f"Arithmetic overflow: cannot add {months} months to {d}")
    last = calendar.monthrange(year, month + 1)[1]
    return (_dt.date(year, month + 1, min(d.day, last)) - _EPOCH).days


def add_months(t: pa.DataType, months: int) -> str:
    """A date or timestamp moved by ``months`` calendar months (its time of day kept)."""
    per_day = 1 if pa.types.is_date(t) else _TICKS_PER_DAY[t.unit]
    storage = pa.int32() if pa.types.is_date32(t) else pa.int64()

    def impl(x: pa.Array) -> pa.Array:
        out: list[int | None] = []
        for v in x.cast(storage).to_pylist():
            if v is None:
                out.append(None)
                continue
            day, rest = divmod(v, per_day)
            out.append(_plus_months(day, months) * per_day + rest)
        return pa.array(out, storage).cast(t)

    return register(f"lancelot_add_months_{t}_{months}", {"x": t}, t, impl)


def text_to_timestamp(src: pa.DataType, t: pa.DataType) -> str:
    """Text to a timestamp as arrow-rs parses it: with an offset as written (to a naive timestamp,
    its UTC time), without one as a wall-clock time in the zone (Arrow C++ refuses both)."""

    def parse(arr: pa.Array) -> pa.Array:
        try:
            return arr.cast(t)
        except pa.ArrowInvalid:
            if t.tz is None:
                return arr.cast(pa.timestamp(t.unit, "UTC")).cast(t)
            return pc.assume_timezone(arr.cast(pa.timestamp(t.unit)), timezone=t.tz).cast(t)

    def impl(x: pa.Array) -> pa.Array:
        try:
            return parse(x)
        except pa.ArrowInvalid:  # offsets on some rows only: row by row
            return pa.concat_arrays([parse(x.slice(i, 1)) for i in range(len(x))]) if len(x) else x.cast(t)

    return register(f"lancelot_text_to_timestamp_{src}_{t}", {"x": src}, t, impl)


# -- CASE, lazily ---------------------------------------------------------------------------------


def lazy_case(
    inputs: dict[str, pa.DataType], conds: list[pc.Expression], vals: list[pc.Expression], out: pa.DataType
) -> str:
    """DataFusion's CASE: each WHEN evaluated on the rows no earlier WHEN took, each THEN (and the
    ELSE, when ``vals`` holds one more) only on the rows that take it, so a branch no row takes
    cannot fail (``CASE WHEN x > 0 THEN 1 / x END``).  ``inputs``: the columns the branches read."""
    import hashlib

    import pyarrow.dataset as pds

    def evaluate(table: pa.Table, expr: pc.Expression) -> pa.Array:
        got = pds.dataset(table).to_table(columns={"v": expr}, use_threads=False).column("v")
        return got.combine_chunks() if got.num_chunks else pa.array([], got.type)

    def impl(*arrays: pa.Array) -> pa.Array:
        table = pa.table(dict(zip(inputs, arrays, strict=True)))
        n = table.num_rows
        result = pa.nulls(n, out)
        remaining = np.ones(n, dtype=bool)
        branches: list[tuple[pc.Expression | None, pc.Expression]] = list(zip(conds, vals, strict=False))
        if len(vals) > len(conds):
            branches.append((None, vals[-1]))
        for cond, val in branches:
            idx = np.flatnonzero(remaining)
            if not len(idx):
                break
            if cond is None:
                rows = idx
            else:
                hit = evaluate(table.take(idx), cond).fill_null(False).to_numpy(zero_copy_only=False)
                rows = idx[hit.astype(bool)]
            if len(rows):
                mask = np.zeros(n, dtype=bool)
                mask[rows] = True
                result = pc.replace_with_mask(result, pa.array(mask), evaluate(table.take(rows), val).cast(out))
                remaining[rows] = False
        return result

    text = "|".join([str(inputs), str(out), *(str(e) for e in conds), "=>", *(str(e) for e in vals)])
    return register(f"lancelot_case_{hashlib.sha1(text.encode()).hexdigest()[:20]}", inputs, out, impl)


def decimal_to_double(t: pa.DataType) -> str:
    """A decimal as arrow-rs casts it to a double: the unscaled integer as a double, divided by
    ``10^scale`` (Arrow C++ multiplies by ``10^-scale``, off in the last digit)."""
    div = 10.0**t.scale

    def impl(x: pa.Array) -> pa.Array:
        if t.bit_width != 128:
            return pc.divide(x.cast(pa.decimal256(t.precision, 0), safe=False).cast(pa.float64()), div)
        words = np.frombuffer(x.buffers()[1], dtype=np.int64, count=2 * (x.offset + len(x)))[2 * x.offset :]
        lo, hi = words[0::2], words[1::2]
        out = lo.astype(np.float64)
        for i in np.flatnonzero(hi != (lo >> 63)):  # beyond int64: the exact integer, rounded once
            out[i] = float((int(hi[i]) << 64) | (int(lo[i]) & (2**64 - 1)))
        return pa.array(out / div, pa.float64(), mask=x.is_null().to_numpy(zero_copy_only=False))

    return register(f"lancelot_decimal_to_double_{t}", {"x": t}, pa.float64(), impl)


def float_decimals(x: pa.Array, t: pa.DataType) -> pa.Array:
    """Floats as arrow-rs casts them to the decimal ``t``: ``x * 10^scale`` in doubles, rounded half away from
    zero, as the unscaled integer (Arrow C++ rounds the float's exact value: 99.99 to decimal(30, 15) is
    99.989999999999995 there, 99.990000000000000 in DataFusion); NaN, an infinity or too many digits fail."""
    with np.errstate(over="ignore", invalid="ignore"):
        m = x.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False) * 10.0**t.scale
        whole = np.trunc(m)
        r = whole + np.where(np.abs(m - whole) >= 0.5, np.sign(m), 0.0)
    valid = x.is_valid().to_numpy(zero_copy_only=False)
    out: list[decimal.Decimal | None] = []
    for v, ok, src in zip(r.tolist(), valid.tolist(), x.to_pylist(), strict=True):
        if not ok:
            out.append(None)
            continue
        if not math.isfinite(v) or abs(int(v)) >= 10**t.precision:
            raise ValueError(f"Cannot cast to Decimal{t.bit_width}({t.precision}, {t.scale}). Overflowing on {src}")
        out.append(decimal.Decimal(f"{int(v)}E-{t.scale}"))
    return pa.array(out, t)


def float_to_decimal(src: pa.DataType, t: pa.DataType) -> str:
    """``float_decimals`` as the function casting ``src`` to ``t``."""

    def impl(x: pa.Array) -> pa.Array:
        try:
            return float_decimals(x, t)
        except ValueError as e:
            raise pa.ArrowInvalid(str(e)) from None

    return register(f"lancelot_float_to_decimal<{src}|{t}>", {"x": src}, t, impl)


def text_decimal(s: str, t: pa.DataType) -> decimal.Decimal:
    """Text as arrow-rs casts it to a decimal: blanks around it ignored, digits with one optional
    point and sign (no exponent), the fraction rounded half away from zero to the scale; no digits at
    all is 0 unless the scale is 0.  ValueError for anything else, or a value the precision cannot hold."""
    body = s.strip()
    negative = body[:1] == "-"
    body = body[1:] if body[:1] in "+-" else body
    whole, _, frac = body.partition(".")
    if not all("0" <= c <= "9" for c in whole + frac) or (not whole + frac and t.scale == 0):
        raise ValueError(f"cannot cast the string {s!r} to {t}")
    n = int(whole or "0") * 10**t.scale
    if len(frac) > t.scale:
        div = 10 ** (len(frac) - t.scale)
        kept, rest = divmod(int(frac), div)
        n += kept + (2 * rest >= div)
    else:
        n += int(frac.ljust(t.scale, "0") or "0")
    if n >= 10**t.precision:
        raise ValueError(f"{s.strip()!r} is too large to store in a {t}")
    return decimal.Decimal(-n if negative else n).scaleb(-t.scale)


def text_to_decimal(src: pa.DataType, t: pa.DataType) -> str:
    """``text_decimal`` of each row (Arrow C++ refuses blanks and rounding, reads exponents)."""
    return rowwise(f"text_to_decimal_{t}", {"x": src}, t, lambda s: text_decimal(s, t))


def failing(message: str, out: pa.DataType) -> str:
    """A function of a boolean that fails with ``message`` where any value is true, else nulls of
    ``out``: what DataFusion refuses only when a row reaches it (a CASE branch no row takes, the
    right side of an ``AND`` whose left side is false on every row)."""

    def impl(where: pa.Array) -> pa.Array:
        if pc.any(where).as_py():
            raise pa.ArrowInvalid(message)
        return pa.nulls(len(where), out)

    return register(f"lancelot_fail_{abs(hash(message))}<{out}>", {"where": pa.bool_()}, out, impl)


# -- decimal128 arithmetic on the unscaled integers --------------------------------------------------------------


def _unscaled(x: pa.Array | pa.Scalar) -> np.ndarray | None:
    """The unscaled values of a decimal128 array (or scalar: one value) as int64 (a view of an array's low words), or
    None when some do not fit."""
    if isinstance(x, pa.Scalar):
        v = x.as_py() if x.is_valid else 0
        n = int(decimal.Decimal(v).scaleb(x.type.scale))
        return np.array([n], np.int64) if abs(n) < 2**63 else None
    words = np.frombuffer(x.buffers()[1], dtype=np.int64, count=2 * (x.offset + len(x)))[2 * x.offset :]
    lo = words[0::2]
    if x.type.precision > 18 and not np.array_equal(words[1::2], lo >> 63):
        return None
    return lo


def _bound(v: np.ndarray, t: pa.DataType) -> int:
    """The largest magnitude among ``v`` (or that its type holds, when that is known to fit)."""
    if t.precision <= 18:
        return int(10**t.precision - 1)
    return max(int(v.max()), -int(v.min())) if len(v) else 0


def decimal_arith(op: str, a_type: pa.DataType, b_type: pa.DataType, out: pa.DataType) -> str:
    """``a op b`` (add, subtract, multiply) of two decimal128 values into the decimal128 ``out`` (Arrow's type for
    them, or wider at the same scale), computed on their unscaled int64 values when every value fits and the largest
    possible result does too (the same exact values as Arrow's kernel, which is several times slower); else by
    Arrow's kernel."""
    name = f"lancelot_decimal_{op}<{a_type}|{b_type}|{out}>"
    scale = out.scale
    ka = 10 ** (scale - a_type.scale) if op != "multiply" else 1
    kb = 10 ** (scale - b_type.scale) if op != "multiply" else 1

    def fast(a: pa.Array | pa.Scalar, b: pa.Array | pa.Scalar, n: int) -> pa.Array | None:
        x, y = _unscaled(a), _unscaled(b)
        if x is None or y is None:
            return None
        bx, by = _bound(x, a.type) * ka, _bound(y, b.type) * kb
        if (bx * by if op == "multiply" else bx + by) >= 2**63:
            if a.type.precision <= 18 and b.type.precision <= 18:  # (the values may be smaller than the types allow)
                bx, by = _bound(x, pa.decimal128(38)) * ka, _bound(y, pa.decimal128(38)) * kb
            if (bx * by if op == "multiply" else bx + by) >= 2**63:
                return None
        buf = pa.allocate_buffer(16 * n)  # (Arrow's pool reuses its memory: fewer page faults than numpy's)
        words = np.frombuffer(buf, np.int64).reshape(n, 2)
        low = words[:, 0]
        if op == "multiply":
            np.multiply(x, y, out=low)
        else:
            np.multiply(x, ka, out=low)
            (np.add if op == "add" else np.subtract)(low, y * kb if kb != 1 else y, out=low)
        np.right_shift(low, 63, out=words[:, 1])
        return pa.Array.from_buffers(out, n, [_validity(a, b, n), buf])

    with _LOCK:
        if name not in _REGISTERED:

            def udf(ctx: pc.UdfContext, a: pa.Array | pa.Scalar, b: pa.Array | pa.Scalar) -> pa.Array:
                n = next((len(v) for v in (a, b) if isinstance(v, pa.Array)), ctx.batch_length)
                out_arr = fast(a, b, n)
                if out_arr is None:
                    arrays = [v if isinstance(v, pa.Array) else pa.repeat(v, n) for v in (a, b)]
                    out_arr = pc.call_function(op, arrays).cast(out)
                return out_arr

            doc = {"summary": name, "description": "lancelot SQL: " + name}
            pc.register_scalar_function(udf, name, doc, {"a": a_type, "b": b_type}, out)
            _REGISTERED.add(name)
    return name


def _validity(a: pa.Array | pa.Scalar, b: pa.Array | pa.Scalar, n: int) -> pa.Buffer | None:
    """The validity bitmap (from row 0) of the ``n`` rows valid in both ``a`` and ``b`` (None: all are)."""
    if not all(v.is_valid for v in (a, b) if isinstance(v, pa.Scalar)):
        return pa.py_buffer(bytes((n + 7) // 8))
    arrays = [v for v in (a, b) if isinstance(v, pa.Array) and v.null_count]
    if not arrays:
        return None
    if len(arrays) == 1 and not arrays[0].offset:
        return arrays[0].buffers()[0]
    valid = arrays[0].is_valid() if len(arrays) == 1 else pc.and_(arrays[0].is_valid(), arrays[1].is_valid())
    return valid.buffers()[1]


def decimal_widen(src: pa.DataType, to: pa.DataType) -> str:
    """A decimal128 as a decimal128 of the same scale and at least its precision: the same buffers (Arrow's cast
    checks every value)."""

    def impl(x: pa.Array) -> pa.Array:
        return pa.Array.from_buffers(to, len(x), x.buffers(), offset=x.offset)

    return register(f"lancelot_decimal_widen<{src}|{to}>", {"x": src}, to, impl)
