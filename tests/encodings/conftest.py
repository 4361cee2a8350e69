"""Fixtures of the encodings tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.encodings.helpers import forget_shared


@pytest.fixture
def own_metadata() -> Iterator[None]:
    """Damaged metadata stays in its test (files of the same bytes share their parsed metadata): the damage
    tests use it for every test (``pytestmark``)."""
    yield
    forget_shared()
