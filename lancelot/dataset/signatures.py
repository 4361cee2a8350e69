"""Signatures of methods that pass their arguments on: pylance repeats long parameter lists (``LanceFragment``'s
``to_batches`` takes ``scanner``'s, ``explain_cleanup_old_versions`` ``cleanup_old_versions``'s); here each list is
written once and the others are derived from it, so ``inspect.signature`` and ``help`` show pylance's parameters in
pylance's order."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def takes(sources: Sequence[Callable[..., Any]], names: str, positional: int = 0) -> Callable[[F], F]:
    """Give the decorated ``(self, *args, **kwargs)`` function the signature ``self``, then the parameters ``names``
    (space-separated, each as the first of ``sources`` having it declares it), the first ``positional`` of them
    positional-or-keyword and the others keyword-only. The function reads them with ``arguments``."""

    def param(i: int, name: str) -> inspect.Parameter:
        p = next(s for s in map(inspect.signature, sources) if name in s.parameters).parameters[name]
        return p.replace(kind=_KINDS[i >= positional])

    def wrap(fn: F) -> F:
        own = inspect.signature(fn)
        params = [own.parameters["self"], *(param(i, n) for i, n in enumerate(names.split()))]
        fn.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
        return fn

    return wrap


def arguments(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A ``takes``-decorated call's arguments by name, defaults filled in (``self`` among ``args``, left out)."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return {k: v for k, v in bound.arguments.items() if k != "self"}


def inherit_arguments(fn: Callable[..., Any], source: Callable[..., Any]) -> None:
    """``fn``'s ``Args:`` with ``source``'s description of each of its parameters it does not
    describe itself: one text for each argument, wherever it is taken."""
    entries = re.findall(r"^( {12}(\w+): .*(?:\n {16}.*)*)", source.__doc__ or "", re.M)
    doc = fn.__doc__ or ""
    mine = set(re.findall(r"^ {12}(\w+): ", doc, re.M))
    wanted = inspect.signature(fn).parameters
    lines = [text for text, name in entries if name in wanted and name not in mine]
    fn.__doc__ = doc.replace("        Args:\n", "        Args:\n" + "".join(t + "\n" for t in lines), 1)
