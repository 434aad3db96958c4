"""What the framework adapters (PyTorch, JAX, Keras 3 backends) share, on top of the
framework-neutral :class:`tabprep.loader.DataLoader`: NVTabular-style arguments, attaching a
workflow, per-column layout of list (multi-hot) columns, and handing arrays over through DLPack.

Nothing here imports a deep-learning framework.

Layout of one batch, ``(features, labels)``:

* scalar columns: 1-D arrays of ``batch`` rows (categorical ids keep their integer dtype,
  continuous float columns are float32, integer ones keep their dtype);
* list columns, per column (``sparse_format``):

  - ``"offsets"`` (default): ``(values, offsets)``, flat values and the int64 start of each
    row in them (``batch`` entries): what ``torch.nn.EmbeddingBag(values, offsets)`` takes;
  - ``"nnzs"``: ``(values, nnzs)``, flat values and int32 counts per row, as NVTabular's
    loaders emit them;
  - columns named in ``sparse_names`` with ``sparse_as_dense=True``: one ``(batch, max_len)``
    array right-padded with 0 (Categorify's padding id); rows longer than ``max_len``
    (``sparse_max``, default the schema's ``value_count["max"]``) are truncated, with the core
    loader's warning (once per loader and column);

* ``labels``: a 1-D array for one label, a dict ``{name: array}`` for several, absent (the
  batch is just ``features``) when there is no label.

With ``stacked=True`` the scalar columns come as a few 2-D arrays instead
(``{"cats": (B, n_cats), "conts": (B, n_conts), <list columns>...}``, labels ``(B,)`` or
``(B, n)``): see :mod:`tabprep.loader.stacked`.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from .. import backend
from .core import DataLoader, RaggedBatch
from .ragged import _RaggedCut
from .arguments import whole_rows
from .blocks import spanned_blocks

log = logging.getLogger(__name__)

SPARSE_FORMATS = ("offsets", "nnzs")


def share_gpu_with_jax() -> None:
    """Stop JAX from claiming 75% of the GPU when its backend starts (XLA's default), so that
    cuDF, which reads and transforms the loader's chunks on the same GPU, keeps memory: sets
    ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` (JAX then allocates as it goes) unless the user set
    ``XLA_PYTHON_CLIENT_PREALLOCATE`` or ``XLA_PYTHON_CLIENT_MEM_FRACTION``. Only effective before
    JAX's first use of the GPU (it runs when tabprep's JAX loader or Keras adapter is imported)."""
    import os

    if "XLA_PYTHON_CLIENT_PREALLOCATE" not in os.environ and "XLA_PYTHON_CLIENT_MEM_FRACTION" not in os.environ:
        os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"


def raw_schema(data: Any, engine: Optional[str] = None, reader_kwargs: Optional[Dict[str, Any]] = None,
               schema: Any = None) -> Any:
    """Schema of the loader's input (what a stateless workflow is bound to)."""
    from ..io.dataset import Dataset
    from ..workflow.workflow import schema_of_frame

    if schema is not None:
        return schema
    if isinstance(data, Dataset):
        return data.schema
    if type(data).__name__ == "DataFrame" and hasattr(data, "columns") and not hasattr(data, "npartitions"):
        return schema_of_frame(data)
    return Dataset(data, engine=engine, **(reader_kwargs or {})).schema


def attach_workflow(loader: DataLoader, workflow: Any, input_schema: Callable[[], Any]) -> None:
    """``loader.map(workflow)``; a workflow of stateless ops that has not seen any data yet
    (no ``fit``) is first bound to the input's schema, which is all it needs."""
    from ..workflow.workflow import Workflow

    if isinstance(workflow, Workflow) and workflow.fitted and workflow._output_schema is None:
        workflow.bind_schema(input_schema(), "the loader's input")
    loader.map(workflow)


def is_batch_fn(obj: Any) -> bool:
    """A plain function for ``loader.map`` (per batch), not a tabprep Workflow (per chunk)."""
    from ..workflow.workflow import Workflow

    return callable(obj) and not isinstance(obj, Workflow)


def dense_columns(loader: DataLoader, names: Optional[Sequence[str]], sparse_max: Dict[str, int]) -> Dict[str, int]:
    """``{column: max_len}`` of the list columns ``names`` (``sparse_names`` with
    ``sparse_as_dense``), which the core pads per chunk; the others stay ragged. Refuses a name that
    is not an emitted feature column (a label, or not loaded)."""
    from .nested import dense_size

    out: Dict[str, Any] = {}
    if not names:
        return out
    schema = loader.output_schema
    emitted = set(loader.cat_names + loader.cont_names)
    for n in names:
        if n not in emitted:
            raise KeyError(f"sparse_names lists {n!r}, which is not among the emitted feature columns "
                           f"{sorted(emitted)}")
        out[n] = dense_size(n, sparse_max.get(n), schema)   # per level for a nested column
    return out


def lengths_to_offsets(lengths: Any, xp: Any, with_end: bool = False) -> Any:
    """Start of each row in the flat values (int64), ``len(lengths)`` entries (``+1`` with the end)."""
    out = xp.zeros(len(lengths) + 1, dtype=xp.int64)
    if len(lengths):
        xp.cumsum(lengths, out=out[1:])
    return out if with_end else out[:-1]


def core_padded_names(sparse_names: Optional[Sequence[str]], labels: Optional[Sequence[str]],
                      sparse_as_dense: bool) -> Optional[List[str]]:
    """The ``sparse_names`` a framework loader's core pads per chunk (with ``sparse_as_dense``): not
    its labels, which the adapter refuses with its own message at the first batch
    (:func:`dense_columns`)."""
    if not sparse_as_dense or sparse_names is None:
        return None
    label_set = set(labels or ())
    return [n for n in sparse_names if n not in label_set]


class LoaderViews:
    """What every framework adapter reports of its core :class:`DataLoader` (``self.loader``)."""

    loader: DataLoader

    #: NVTabular / merlin-dataloader's ``loader.map(fn)`` functions, applied in order to every
    #: converted batch: ``fn(x, y) -> (x, y)`` (or ``(x, y, sample_weights)`` for Keras); ``fn(x)``
    #: for a loader without labels
    _batch_fns: tuple = ()
    #: the iteration ``next(loader)`` continues (NVTabular's loader is its own iterator)
    _next_iter: Any = None

    @property
    def batch_size(self) -> int:
        return self.loader.batch_size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        """Rows per batch from the next epoch on (NVTabular's ``TorchAsyncItr.batch_size = n``)."""
        self._next_iter = None
        self.loader.set_batch_size(value)

    def _add_batch_fn(self, fn: Callable[..., Any]) -> None:
        self._batch_fns = tuple(self._batch_fns) + (fn,)

    def _with_labels(self, x: Any, batch: Dict[str, Any], done: Dict[str, Any], convert: Callable[[Any], Any]) -> Any:
        """``(x, y)`` of a converted batch: ``y`` the label (a dict of them when there are several),
        each from ``done`` (block columns already converted) or ``convert(batch[name])``; ``x``
        alone for a loader without labels. A list column as a label is refused."""
        labels = self.loader.label_names
        if not labels:
            return x
        ys = {}
        for name in labels:
            if name in done:   # (a block column: single-valued)
                ys[name] = done[name]
                continue
            value = batch[name]
            if isinstance(value, RaggedBatch):
                raise TypeError(f"label {name!r} is a list column; labels must be single-valued")
            ys[name] = convert(value)
        return x, (ys[labels[0]] if len(labels) == 1 else ys)

    def _mapped(self, batch: Any) -> Any:
        for fn in self._batch_fns:
            batch = fn(*batch) if isinstance(batch, tuple) else fn(batch)
        return batch

    #: the ``sparse_names`` padded with ``sparse_as_dense`` (None: none named), and their padded
    #: sizes once checked against the emitted features (:meth:`_dense_columns`; reset by a new schema)
    _dense_names: Optional[List[str]] = None
    _dense_max: Optional[Dict[str, Any]] = None

    def _dense_columns(self) -> Dict[str, Any]:
        """``{list column: max_len}`` of the ``sparse_names`` padded with ``sparse_as_dense`` (by the
        core, per chunk), checked once against the emitted features (:func:`dense_columns`: a label
        or a column not loaded is refused)."""
        if self._dense_max is None:
            self._dense_max = dense_columns(self.loader, self._dense_names, self._sparse_max_arg)
        return self._dense_max

    def _convert(self, batch: Dict[str, Any]) -> Any:
        self._dense_columns()   # sparse_names checked at the first batch (the core pads them)
        return self._mapped(self._convert_batch(batch))

    def _convert_batch(self, batch: Dict[str, Any]) -> Any:
        raise NotImplementedError

    def __next__(self) -> Any:
        """The next batch of the epoch in progress (a new epoch after the last one ended), as
        NVTabular's loaders, which are iterators as well as iterables."""
        if self._next_iter is None:
            self._next_iter = iter(self)
        try:
            return next(self._next_iter)
        except StopIteration:
            self._next_iter = None
            raise

    def stop(self) -> None:
        """End the epoch in progress (NVTabular's ``loader.stop()``): the next ``next(loader)`` or
        ``for`` loop starts a new epoch; the background thread stops."""
        it, self._next_iter = self._next_iter, None
        if it is not None and hasattr(it, "close"):
            it.close()
        self.loader.close()

    @property
    def cat_names(self) -> List[str]:
        return self.loader.cat_names

    @property
    def cont_names(self) -> List[str]:
        return self.loader.cont_names

    @property
    def label_names(self) -> List[str]:
        return self.loader.label_names

    @property
    def sparse_names(self) -> List[str]:
        """List (multi-hot) columns among the emitted ones."""
        return self.loader.sparse_names

    @property
    def output_schema(self) -> Any:
        return self.loader.output_schema

    @property
    def input_schema(self) -> Any:
        """Schema of the data read, before the mapped workflow (merlin-dataloader's
        ``input_schema``): :attr:`tabprep.loader.DataLoader.input_schema`."""
        return self.loader.input_schema

    @input_schema.setter
    def input_schema(self, value: Any) -> None:
        """merlin-dataloader's setter: :attr:`tabprep.loader.DataLoader.input_schema` (the names from
        its tags); a workflow mapped later reads this schema too."""
        self.loader.input_schema = value
        self._schema = value
        self._dense_max = None

    @property
    def schema(self) -> Any:
        """Deprecated in merlin-dataloader 23.08 (a warning naming ``input_schema``): :attr:`input_schema`."""
        import warnings

        warnings.warn("This `schema` property is deprecated and will be removed in a future version. Please use "
                      "either the `input_schema` or `output_schema` property instead.", UserWarning, stacklevel=2)
        return self.loader.input_schema

    def epochs(self, epochs: int = 1) -> Any:
        """A loader whose every iteration streams the data ``epochs`` times (merlin-dataloader's
        ``loader.epochs(n)``): this loader when it already does, else a new one (this one unchanged);
        see :meth:`tabprep.loader.DataLoader.epochs` (each pass reshuffled, batches run on across
        passes, ``len`` is ``ceil(n * rows / batch_size)``)."""
        import copy

        core = self.loader.epochs(epochs)
        if core is self.loader:
            return self
        new = copy.copy(self)
        new.loader = core
        new._next_iter = None
        return new

    @property
    def global_size(self) -> int:
        return self.loader.global_size

    @property
    def global_rank(self) -> int:
        return self.loader.global_rank


class FrameworkLoader(LoaderViews):
    """Base of the PyTorch and JAX loaders: a :class:`DataLoader` plus the batch layout above.

    Subclasses implement :meth:`_array` (one numpy / cupy array to a framework array).
    Arguments are NVTabular's ``TorchAsyncItr`` ones (``cats`` / ``conts`` / ``labels``), plus
    tabprep's (``buffer_size``, ``seed``, ``prefetch``, ``threads``, ``sparse_format``,
    ``storage_options``...); see
    :class:`tabprep.loader.DataLoader` for chunking, shuffling and sharding.
    """

    def __init__(self, dataset: Any, batch_size: Any = 1, cats: Optional[Sequence[str]] = None,
                 conts: Optional[Sequence[str]] = None, labels: Union[None, str, Sequence[str]] = None,
                 shuffle: bool = False, seed_fn: Optional[Callable[[], int]] = None, parts_per_chunk: int = 1,
                 device: Union[None, str, int] = None, global_size: Optional[int] = None,
                 global_rank: Optional[int] = None, drop_last: bool = False,
                 sparse_names: Optional[Sequence[str]] = None, sparse_max: Optional[Dict[str, int]] = None,
                 sparse_as_dense: bool = False, sparse_format: str = "offsets", buffer_size: float = 0.1,
                 engine: Optional[str] = None, reader_kwargs: Optional[Dict[str, Any]] = None, schema: Any = None,
                 seed: Optional[int] = None, prefetch: int = 1, threads: Optional[int] = None,
                 workflow: Any = None, storage_options: Optional[Dict[str, Any]] = None,
                 stacked: bool = False) -> None:
        if sparse_format not in SPARSE_FORMATS:
            raise ValueError(f"sparse_format must be one of {SPARSE_FORMATS}, got {sparse_format!r}")
        batch_size = whole_rows(batch_size)   # as the core loader takes it (50.0 is 50; 2.5 is refused)
        if isinstance(labels, str):
            labels = [labels]
        self.sparse_format = sparse_format
        self.sparse_as_dense = bool(sparse_as_dense)
        #: batches as a few 2-D arrays ({"cats", "conts"}, labels; :mod:`tabprep.loader.stacked`)
        self.stacked = bool(stacked)
        self._dense_names = list(sparse_names) if self.sparse_as_dense and sparse_names is not None else None
        self._sparse_max_arg = dict(sparse_max or {})
        self.storage_options = storage_options
        self._data, self._engine, self._schema = dataset, engine, schema
        # the core pads the dense list columns once per chunk: every list column, or with
        # sparse_names only those (NVTabular's per-column rule; the core's sparse_names leave the
        # others ragged). Padded per batch here, they cost a scatter per batch and column (Keras on
        # JAX, one H200, multi-hot dense 0.39x of flat: docs/benchmarks.md, twenty-first session).
        self.loader = DataLoader(dataset, int(batch_size), label_names=labels, cat_names=cats, cont_names=conts,
                                 engine=engine, shuffle=shuffle, seed_fn=seed_fn, buffer_size=buffer_size,
                                 device=device, parts_per_chunk=parts_per_chunk, reader_kwargs=reader_kwargs,
                                 global_size=global_size, global_rank=global_rank, drop_last=drop_last,
                                 sparse_names=core_padded_names(sparse_names, labels, self.sparse_as_dense),
                                 sparse_max=sparse_max if self.sparse_as_dense else None,
                                 sparse_as_dense=self.sparse_as_dense, schema=schema, seed=seed, prefetch=prefetch,
                                 threads=threads, storage_options=storage_options)
        # the ragged columns' offsets of every batch made once per chunk on the preparing threads,
        # handed over as views (_list_column); "nnzs" hands the lengths over as they are
        self.loader.batch_starts = sparse_format == "offsets"
        if workflow is not None:
            self.map(workflow)

    # -- configuration ---------------------------------------------------------------------
    def map(self, workflow: Any) -> "FrameworkLoader":
        """Apply ``workflow`` (a :class:`tabprep.Workflow`; one of stateless ops needs no fit)
        to every chunk online; or, as NVTabular / merlin-dataloader do, a plain function to every
        batch: ``fn(x, y) -> (x, y)`` (``fn(x)`` without labels), applied in the order given.
        Returns ``self``."""
        if is_batch_fn(workflow):
            self._add_batch_fn(workflow)
            return self
        attach_workflow(self.loader, workflow,
                        lambda: raw_schema(self._data, self._engine, self.loader._reader_kwargs, self._schema))
        self._dense_max = None
        return self


    # -- batches ---------------------------------------------------------------------------
    def __len__(self) -> int:
        """Batches per epoch on this rank."""
        return len(self.loader)

    def _batches(self) -> Iterator[Any]:
        for batch in self.loader.iterate(views=self._views):
            yield self._convert(batch)

    def __iter__(self) -> Iterator[Any]:
        """One epoch of ``(features, labels)`` (each ``for`` loop is a new epoch)."""
        return self._batches()

    def peek(self) -> Any:
        """The first batch of the current epoch, converted, without consuming it."""
        return self._convert(self.loader.peek())

    def close(self) -> None:
        """Stop the loader's background thread."""
        self.loader.close()

    #: hand a batch's blocks over in one DLPack call each and take the columns as rows of the
    #: framework's 2-D array (torch: free views); False: one hand-off per column
    _block_handoff = True

    @property
    def _views(self) -> bool:
        """Whether the core's batches must hold a view per block column (``DataLoader.iterate``):
        not where the blocks are handed over (the conversion reads them, not the columns)."""
        return not self._block_handoff

    def _array(self, arr: Any) -> Any:
        raise NotImplementedError

    def _block_columns(self, block: Any, span: Any = None, index: int = 0) -> List[Any]:
        """The rows of a batch's block (``(columns, rows)``, numpy / cupy) as framework arrays:
        one hand-off, then row views. ``span``, ``index``: where the block lies in its chunk and its
        position in the batch (:attr:`Batch.spans`; used by the JAX adapter)."""
        arr = self._array(block)
        return [arr[j] for j in range(block.shape[0])]

    def _blocks_columns(self, items: List[Tuple[int, Tuple[str, ...], Any, Any]]) -> List[List[Any]]:
        """:meth:`_block_columns` of each of a batch's blocks (``items``: :func:`spanned_blocks`), in
        order; an adapter may hand them over together (JAX: one jitted call for all)."""
        return [self._block_columns(block, span, i) for i, _, block, span in items]

    def _list_column(self, name: str, value: RaggedBatch) -> Any:
        # (the sparse_names padded with sparse_as_dense come padded from the core: 2-D, not lists)
        from .nested import NestedBatch

        xp = backend.array_module(value.values)
        if self.sparse_format == "nnzs":   # nested too: leaves and leaves per row, as NVTabular
            return self._array(value.values), self._array(value.lengths.astype(xp.int32))
        if isinstance(value, NestedBatch):  # offsets per level, outermost first (each without its end)
            return self._array(value.values), tuple(self._array(lengths_to_offsets(lengths, xp))
                                                    for lengths in value.nested_row_lengths)
        if isinstance(value, _RaggedCut):   # a batch of its chunk: offsets made per chunk (ragged.add_batch_starts)
            return self._array(value.values), self._array(value.starts)
        return self._array(value.values), self._array(lengths_to_offsets(value.lengths, xp))

    def _convert_batch(self, batch: Dict[str, Any]) -> Any:
        # no wait for the device here: the batch's arrays were complete when their chunk was handed
        # over, and DLPack (``__dlpack__(stream=...)``) orders any work this thread queued since
        # (a join of two chunks, list offsets) before the framework's stream reads it
        with self.loader._device.context():
            return self._convert_on_device(batch)

    def _stacked_groups(self, batch: Any) -> Tuple[Tuple[Any, ...], tuple]:
        """The stacked groups of ``batch`` (:func:`tabprep.loader.stacked.stack_layout`) and their
        framework arrays: stacked with numpy / cupy, one hand-off per group."""
        from .stacked import stack_batch

        loader = self.loader
        return stack_batch(batch, loader.cat_names, loader.cont_names, loader.label_names, True, self._array)

    def _convert_stacked(self, batch: Dict[str, Any]) -> Any:
        """``({"cats": (B, n), "conts": (B, n), <list column>: ...}, labels)`` (``stacked=True``)."""
        from .stacked import list_names, split_groups

        groups, arrays = self._stacked_groups(batch)
        x, y = split_groups(groups, arrays)
        for name in list_names(groups, self.loader.cat_names, self.loader.cont_names):
            x[name] = self._feature(name, batch[name])
        return (x, y) if self.loader.label_names else x

    def _feature(self, name: str, value: Any) -> Any:
        """Feature column ``name`` of a batch (``value``) in the per-column layout: a list column's
        form (:meth:`_list_column`) or one framework array."""
        return self._list_column(name, value) if isinstance(value, RaggedBatch) else self._array(value)

    def _convert_on_device(self, batch: Dict[str, Any]) -> Any:
        if self.stacked:
            return self._convert_stacked(batch)
        done: Dict[str, Any] = {}
        if self._block_handoff:
            items = spanned_blocks(batch)
            for (_, names, _, _), cols in zip(items, self._blocks_columns(items)):
                done.update(zip(names, cols))   # one hand-off per block
        x: Dict[str, Any] = {}
        for name in self.loader.cat_names + self.loader.cont_names:
            x[name] = done[name] if name in done else self._feature(name, batch[name])
        return self._with_labels(x, batch, done, self._array)

    def __repr__(self) -> str:
        return repr(self.loader).replace("DataLoader(", f"{type(self).__name__}(", 1)


__all__ = ["FrameworkLoader", "share_gpu_with_jax", "attach_workflow", "core_padded_names", "dense_columns", "raw_schema", "lengths_to_offsets", "SPARSE_FORMATS"]
