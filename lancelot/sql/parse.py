"""SQL text -> sqlglot syntax tree, in the dialect of pylance's filter strings.

pylance parses filters with sqlparser-rs's generic dialect changed in three ways, and so does
``LanceDialect`` here, by configuring sqlglot's own tokenizer and parser (no tokenizer of ours):
backticks quote identifiers, double quotes make string literals (as single quotes do), ``==``
means ``=``; every function call stays a plain call by name (sqlglot's function table is emptied)
so that names are resolved against pylance's functions, not sqlglot's.
"""

from __future__ import annotations

import functools
import re

import sqlglot
from sqlglot import exp
from sqlglot import parser as _parser
from sqlglot import tokens as _tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel, ParseError, TokenError

from lancelot.sql.errors import SqlError


class LanceDialect(Dialect):
    """pylance's filter dialect (rust/lance-datafusion/src/sql.rs: LanceDialect)."""

    class Tokenizer(_tokens.Tokenizer):
        QUOTES = ["'", '"']
        IDENTIFIERS = ["`"]
        STRING_ESCAPES = ["'"]
        HEX_STRINGS = [("x'", "'"), ("X'", "'")]
        KEYWORDS = {k: v for k, v in _tokens.Tokenizer.KEYWORDS.items() if k != "<=>"}  # not an operator

    class Parser(_parser.Parser):
        FUNCTIONS = {}  # every call is an exp.Anonymous named as written
        # sqlparser-rs: IS binds looser than comparisons (``x > 1 IS NULL`` is ``(x > 1) IS NULL``)
        IS_PREDICATE_PRECEDENCE = _parser.IsPredicatePrecedence.LOW
        FUNCTION_PARSERS = {  # and so are these, plain functions to DataFusion
            k: v for k, v in _parser.Parser.FUNCTION_PARSERS.items() if k not in ("INITCAP", "CHR", "CHAR")
        }

        def _parse_is_rhs(self, distinct: bool = False) -> exp.Expr | None:
            # sqlparser-rs: IS [NOT] DISTINCT FROM takes a whole expression, OR included
            # (``a IS DISTINCT FROM b OR c`` is ``a IS DISTINCT FROM (b OR c)``)
            return self._parse_disjunction() if distinct else super()._parse_is_rhs(distinct)

        def _parse_factor_operand(self) -> exp.Expr | None:
            # sqlparser-rs: ``||`` binds tighter than ``*`` and ``+`` (``s || i * 2`` is ``(s || i) * 2``)
            this = super()._parse_factor_operand()
            while self._match(sqlglot.TokenType.DPIPE):
                this = self.expression(exp.DPipe(this=this, expression=super()._parse_factor_operand(), safe=True))
            return this


def position(node: exp.Expr | None) -> str:
    """``line L, column C`` where ``node`` starts: its leftmost token that sqlglot located (or, when
    it located none, its nearest ancestor's)."""
    while node is not None:
        located = [n.meta for n in node.walk() if isinstance(n, exp.Expr) and "line" in n.meta]
        if located:
            first = min(located, key=lambda m: m["start"])
            return f"line {first['line']}, column {first['col'] - (first['end'] - first['start'])}"
        node = node.parent
    return "?"


_MISSING = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>")


def _describe(description: str, token: str) -> str:
    """sqlglot's parser message in the words of SQL."""
    m = _MISSING.match(description or "")
    if m:
        keyword, node = m.groups()
        if node == "Between":
            return "BETWEEN needs both bounds (x BETWEEN low AND high)"
        return f"expected an expression after {token!r}" if token else f"incomplete {node}"
    return description


def syntax_error(sql: str, what: str, e: ParseError | TokenError) -> SqlError:
    """The SqlError for a parse failure of ``sql`` (``what`` it was meant to be), pointing at where it failed."""
    errors = getattr(e, "errors", None) or []
    if errors:
        d = errors[0]
        token = d.get("highlight") or ""
        near = f" near {token!r}" if token else ""
        return SqlError(
            f"cannot parse the SQL {what} {sql!r}: {_describe(d.get('description'), token)} at line "
            f"{d.get('line')}, column {d.get('col')}{near}"
        )
    if isinstance(e, TokenError):
        return SqlError(f"cannot read the SQL {what} {sql!r}: an unterminated quote or an unknown character ({e})")
    return SqlError(f"cannot parse the SQL {what} {sql!r}: {e}")


_DIALECT = LanceDialect()


@functools.lru_cache(maxsize=512)
def _trees(sql: str) -> tuple[exp.Expr | None, ...]:
    """sqlglot's trees of ``sql``, remembered: the same filters and expressions come again (scans, updates).  The
    trees are shared, so read only: translators keep what they learn by node, beside the tree."""
    return tuple(sqlglot.parse(sql, dialect=_DIALECT, error_level=ErrorLevel.IMMEDIATE))


def parse_sql(sql: str, what: str = "filter") -> exp.Expr:
    """The syntax tree of one SQL expression (``what`` names it in errors: filter, expression); shared with every
    other parse of the same text, so never to be changed."""
    if not isinstance(sql, str):
        raise TypeError(f"a SQL {what} must be a str, not {type(sql).__name__}")
    if not sql.strip():
        raise SqlError(f"the SQL {what} is empty")
    try:
        trees = _trees(sql)
    except (ParseError, TokenError) as e:
        raise syntax_error(sql, what, e) from None
    if len(trees) != 1 or trees[0] is None:
        raise SqlError(f"the SQL {what} {sql!r} must be one expression (no ';')")
    tree = trees[0]
    if not isinstance(tree, exp.Condition) and isinstance(tree, exp.Query | exp.DDL | exp.DML | exp.Command):
        raise SqlError(f"the SQL {what} {sql!r} is a statement, not an expression")
    return tree
