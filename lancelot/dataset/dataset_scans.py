"""``LanceDataset``'s scans: its fragments, and the scanner and what reads through it (``to_table``,
``to_batches``, ``to_pandas``, ``count_rows``); the scan itself is dataset/scanner.py's."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lancelot.dataset.fragment import Fragment
from lancelot.dataset.fragment_metadata import manifest_live_rows
from lancelot.dataset.scan import scan_arguments
from lancelot.dataset.scanner import LanceScanner, unsupported
from lancelot.dataset.signatures import arguments, inherit_arguments, takes
from lancelot.errors import LanceValueError

if TYPE_CHECKING:
    from lancelot.dataset.dataset import LanceDataset


#: the parameters of ``to_table``, ``to_batches`` and ``to_pandas`` (pylance's, in its order; the first ten positional)
_SCAN = (
    "columns filter limit offset nearest batch_size batch_size_bytes batch_readahead fragment_readahead scan_in_order"
)
_TABLE = f"{_SCAN} prefilter with_row_id with_row_address use_stats fast_search full_text_query io_buffer_size \
late_materialization blob_handling use_scalar_index include_deleted_rows order_by disable_scoring_autoprojection"
_BATCHES = f"{_SCAN} prefilter with_row_id with_row_address use_stats full_text_query io_buffer_size \
late_materialization blob_handling use_scalar_index strict_batch_size order_by disable_scoring_autoprojection"
_TABLE_NAMES = frozenset(_TABLE.split())
_PANDAS = f"{_SCAN.replace(' batch_size_bytes', '')} prefilter with_row_id with_row_address use_stats fast_search \
full_text_query io_buffer_size late_materialization blob_mode use_scalar_index include_deleted_rows order_by \
disable_scoring_autoprojection"


class ScansMixin:
    """LanceDataset's scans (mixed into ``LanceDataset``; see dataset/dataset.py)."""

    def get_fragments(self: LanceDataset, filter: pc.Expression | None = None) -> list[Fragment]:
        """The fragments of this version, in order.

        Args:
            filter: Not supported (pylance refuses it too); must be None.

        Returns:
            One [`LanceFragment`][lancelot.dataset.fragment.Fragment] per fragment.
        """
        if filter is not None:
            raise LanceValueError("get_fragments() does not support filter yet")
        return list(self.fragments)

    def __len__(self: LanceDataset) -> int:
        return self.count_rows()

    def get_fragment(self: LanceDataset, fragment_id: int) -> Fragment | None:
        """One fragment of this version.

        Args:
            fragment_id: The fragment's id (``FragmentMetadata.id``, not its position).

        Returns:
            The [`LanceFragment`][lancelot.dataset.fragment.Fragment], or None when this version has no
            fragment of that id.
        """
        state = self._state
        if state.fragment_positions is None:  # built once per version: a loop over fragments stays linear
            state.fragment_positions = {int(f.id): i for i, f in enumerate(state.manifest.fragments)}
        pos = state.fragment_positions.get(fragment_id)
        if pos is None:
            return None
        if state.fragments is None:  # one Fragment, not one per fragment of the version
            return Fragment(self, state.manifest.fragments[pos])
        return state.fragments[pos]

    def count_rows(self: LanceDataset, filter: str | pc.Expression | None = None, **kwargs: Any) -> int:
        """The number of live (not deleted) rows, or of those matching ``filter``.

        Without a filter the count comes from the manifest (no data file is opened when each fragment
        records its row count, as pylance's writers do).

        Args:
            filter: SQL text (``"id > 5 AND name LIKE 'a%'"``) or a ``pyarrow.compute`` Expression.
            **kwargs: Other scanner options (``scanner``).

        Returns:
            The row count.

        Raises:
            OSError: A filter it cannot use (as pylance; also a ValueError).

        Examples:
            >>> ds.count_rows(), ds.count_rows("id >= 7")
            (10, 3)
        """
        if filter is None and not kwargs:
            state = self._state
            if state.live_rows is None:
                state.live_rows = manifest_live_rows(state.manifest)
            if state.live_rows is None:
                state.live_rows = sum(f.count_rows() for f in self.fragments)
            return state.live_rows
        from lancelot.sql.errors import CountFilterError, SqlError

        try:
            return self.scanner(filter=filter, **kwargs).count_rows()
        except SqlError as e:
            raise CountFilterError(str(e)) from None

    def scanner(
        self: LanceDataset,
        columns: Sequence[str] | dict[str, str] | None = None,
        filter: str | pc.Expression | None = None,
        limit: int | None = None,
        offset: int | None = None,
        nearest: dict[str, Any] | None = None,
        batch_size: int | None = None,
        batch_size_bytes: int | None = None,
        batch_readahead: int | None = None,
        fragment_readahead: int | None = None,
        scan_in_order: bool | None = None,
        fragments: Iterable[Fragment] | None = None,
        index_segments: Iterable[Any] | None = None,
        full_text_query: Any = None,
        *,
        prefilter: bool | None = None,
        with_row_id: bool | None = None,
        with_row_address: bool | None = None,
        use_stats: bool | None = None,
        fast_search: bool | None = None,
        io_buffer_size: int | None = None,
        late_materialization: bool | list[str] | None = None,
        blob_handling: str | None = None,
        use_scalar_index: bool | None = None,
        include_deleted_rows: bool | None = None,
        scan_stats_callback: Any = None,
        strict_batch_size: bool | None = None,
        order_by: list[Any] | None = None,
        disable_scoring_autoprojection: bool | None = None,
        row_addr_allowlist: bytes | None = None,
        row_addr_blocklist: bytes | None = None,
    ) -> LanceScanner:
        """A scan of this version: what to read, which rows, in what shape (pylance's ``scanner``).

        Nothing is read until the scanner's ``to_table``, ``to_batches``, ``to_reader``,
        ``count_rows`` or ``head`` runs. Read-tuning options are accepted and ignored; options lancelot
        cannot honour are refused rather than silently dropped.

        Args:
            columns: The columns to return: a list of names (nested fields as ``"s.x"``; ``_rowid``,
                ``_rowaddr``, ``_rowoffset`` too), or a dict of output name to SQL expression. None: all.
            filter: A row filter: SQL text as pylance parses it (comparisons, ``AND``/``OR``/``NOT``,
                ``IN``, ``LIKE``, ``IS NULL``, ``regexp_match``, casts...) or a ``pyarrow.compute``
                Expression. Zone maps skip pages that cannot match.
            limit: At most this many rows.
            offset: Skip this many rows first.
            nearest: A vector search: ``{"column": name, "q": vector, "k": 10, "metric": "l2"}``
                (also ``"cosine"``, ``"dot"``). lancelot's search is exact (brute force over the live
                rows); pylance uses a vector index when there is one.
            batch_size: Rows per batch of ``to_batches`` (default 8192, or ``LANCE_DEFAULT_BATCH_SIZE``).
            batch_size_bytes: Accepted; no effect.
            batch_readahead: Accepted; no effect.
            fragment_readahead: Accepted; no effect.
            scan_in_order: Accepted; no effect (results are always in fragment order).
            fragments: Scan only these fragments (``LanceFragment`` objects or ids), in this order.
            index_segments: Not supported (refused when given).
            full_text_query: Not supported: lancelot has no full-text search (refused when given).
            prefilter: With ``nearest``: filter before searching (True) or after (False, the default).
            with_row_id: Add the ``_rowid`` column.
            with_row_address: Add the ``_rowaddr`` column (fragment id << 32 | position in fragment).
            use_stats: Accepted; no effect.
            fast_search: Accepted; no effect.
            io_buffer_size: Accepted; no effect.
            late_materialization: Which columns are read after the filter (True, False or a list); the
                batches have pylance's shapes.
            blob_handling: ``"all_binary"``: blob columns as their bytes; ``"blobs_descriptions"`` (the
                default) or ``"all_descriptions"``: as their descriptions.
            use_scalar_index: Accepted; no effect (lancelot uses no index).
            include_deleted_rows: Also return deleted rows (needs ``with_row_id``), as pylance.
            scan_stats_callback: Accepted; never called.
            strict_batch_size: Every batch but the last holds exactly ``batch_size`` rows, across fragments.
            order_by: Sort keys: column names or ``ColumnOrdering(name, ascending, nulls_first)``.
            disable_scoring_autoprojection: With ``nearest``: leave out the ``_distance`` column.
            row_addr_allowlist: Not supported (refused when given).
            row_addr_blocklist: Not supported (refused when given).

        Returns:
            A [`LanceScanner`][lancelot.dataset.scanner.LanceScanner].

        Raises:
            ValueError: An unknown column, a filter that does not parse or names no column, a negative
                limit or offset, or an option lancelot does not support.

        Examples:
            >>> s = ds.scanner(columns={"id2": "id * 2"}, filter="id < 5", limit=3, with_row_id=True)
            >>> s.to_table().to_pydict()
            {'id2': [0, 2, 4], '_rowid': [0, 1, 2]}
        """
        args = scan_arguments(locals())
        ds = self
        if self._default_scan_options is not None:  # (the options' scan reads the stored schema)
            args, ds = with_defaults(args, self._default_scan_options), self._without_scan_defaults()
        refused = ("index_segments", "full_text_query", "row_addr_allowlist", "row_addr_blocklist")
        unsupported(f"dataset {self.uri!r}", **{k: args.pop(k) for k in refused})
        return LanceScanner(ds, **args)

    @takes([scanner], _TABLE, positional=10)
    def to_table(self: LanceDataset, *args: Any, **kwargs: Any) -> pa.Table:
        """The live rows (matching ``filter``) as one table, in fragment order: ``scanner(...).to_table()``.

        Takes the arguments of [`scanner`][lancelot.dataset.dataset.LanceDataset.scanner].

        Args:

        Returns:
            A ``pyarrow.Table`` of the projected schema.

        Raises:
            ValueError: As ``scanner`` raises it.

        Examples:
            >>> ds.to_table(columns=["id"], filter="id > 6 AND name LIKE 'n%'").to_pydict()
            {'id': [7, 8, 9]}
        """
        if len(args) > 10 or not _TABLE_NAMES.issuperset(kwargs):  # (else scanner's order and names: passed on)
            arguments(ScansMixin.to_table, (self, *args), kwargs)  # the TypeError of a call outside the signature
        return self.scanner(*args, **kwargs).to_table()

    @takes([scanner], _BATCHES, positional=10)
    def to_batches(self: LanceDataset, *args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        """The scan's result in record batches: ``scanner(...).to_batches()``.

        A batch holds at most ``batch_size`` rows, and never rows of two fragments; with a filter, a
        batch holds the rows that passed of ``batch_size`` rows read (empty ones are skipped), joined
        up to ``batch_size`` rows when columns are read after the filter, as pylance cuts them.

        Takes the arguments of [`scanner`][lancelot.dataset.dataset.LanceDataset.scanner].

        Args:
            **kwargs: Other ``scanner`` options.

        Returns:
            An iterator of ``pyarrow.RecordBatch``.

        Examples:
            >>> [b.num_rows for b in ds.to_batches(batch_size=4)]
            [4, 4, 2]
        """
        if len(args) > 10:  # (else scanner's order; the keywords are scanner's)
            arguments(ScansMixin.to_batches, (self, *args), kwargs)  # the TypeError of a call outside the signature
        return self.scanner(*args, **kwargs).to_batches()

    @takes([scanner, LanceScanner.to_pandas], _PANDAS, positional=9)
    def to_pandas(self: LanceDataset, *args: Any, **kwargs: Any) -> Any:
        """The rows as a pandas DataFrame: needs pandas installed.

        Takes the arguments of [`scanner`][lancelot.dataset.dataset.LanceDataset.scanner], and:

        Args:
            blob_mode: Blob columns as ``BlobFile`` objects (``"lazy"``, pylance's default), their bytes
                (``"bytes"``) or their descriptions (``"descriptions"``).
            **kwargs: Options of ``pyarrow.Table.to_pandas``.

        Returns:
            A pandas DataFrame.
        """
        scan = arguments(ScansMixin.to_pandas, (self, *args), kwargs)
        blob_mode, options = scan.pop("blob_mode"), scan.pop("kwargs")
        return self.scanner(**scan).to_pandas(blob_mode=blob_mode, **options)

    def _empty(self: LanceDataset, columns: Sequence[str] | dict[str, str] | None) -> pa.Table:
        return self.scanner(columns=columns).projected_schema.empty_table()


_fn: Any
for _fn in (ScansMixin.to_pandas, ScansMixin.to_batches):  # and pylance's **kwargs (more options)
    _sig = inspect.signature(_fn)
    _fn.__signature__ = _sig.replace(
        parameters=[*_sig.parameters.values(), inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)]
    )
for _fn in (ScansMixin.to_pandas, ScansMixin.to_table, ScansMixin.to_batches):
    inherit_arguments(_fn, ScansMixin.scanner)


def with_defaults(args: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """A scan's options with the dataset's default scan options where the scan gives none, as pylance applies them
    (its scanner builder's names: ``with_fragments`` for ``fragments``).

    Raises:
        LanceValueError: An option ``scanner`` has not.
    """
    out = dict(args)
    for key, value in defaults.items():
        name = {"with_fragments": "fragments", "with_index_segments": "index_segments"}.get(key, key)
        if name not in out:
            raise LanceValueError(f"Unknown option {key}")
        if out[name] is None:
            out[name] = value
    return out
