"""merlin-dataloader 23.08's calls on :class:`tabprep.loader.DataLoader` that NVTabular scripts
use (issue #29): ``loader.epochs(n)``, ``loader.input_schema`` and the deprecated ``loader.schema``.
Mixed into the core loader (the framework adapters forward them: :mod:`tabprep.loader._adapter`);
split out of :mod:`tabprep.loader.core`, whose state (``_epochs``, ``_epoch_base``, the iteration
fields) they read and copy."""
from __future__ import annotations

import copy
import threading
import warnings
from typing import Any, Optional

from ..schema import Schema, Tags


class MerlinLoaderCalls:
    """``epochs`` / ``input_schema`` / ``schema`` of :class:`tabprep.loader.DataLoader`."""

    def epochs(self, epochs: int = 1) -> Any:
        """A loader whose every iteration streams the data ``epochs`` times (merlin-dataloader's
        ``loader.epochs(n)``): the loader itself when it already does, else a new loader (this one
        is unchanged) over the same data, workflow and seed.

        Each of the ``n`` passes is a new epoch: its pieces and rows are shuffled with that epoch's
        seed (``seed_fn`` is called once per pass), so the rows are exactly those of ``n`` plain
        epochs in turn; batches run on across the passes (only the iteration's last batch may be
        short), so ``len`` is ``ceil(n * rows / batch_size)`` (``floor`` with ``drop_last``). The
        new loader's first pass is the next epoch this loader would have played; iterating it again
        plays the ``n`` epochs after those.
        """
        if isinstance(epochs, bool) or int(epochs) != epochs or int(epochs) < 1:
            raise ValueError(f"epochs must be an int >= 1, got {epochs!r}")
        n = int(epochs)
        if n == self._epochs:
            return self
        with self._lock:
            new = copy.copy(self)
            # the next data epoch this loader has not played yet
            base = self._epoch_base + (self.epoch + (1 if self._started else 0)) * self._epochs
        # its own iteration state (the copy shares the data, workflow and planned pieces)
        new._lock = threading.RLock()
        new._epoch_seeds = dict(self._epoch_seeds)
        new._plans = {}
        new._stream, new._gen, new._gen_next = None, None, -1
        new.epoch, new._started, new._done = 0, False, False
        new._warned_nulls, new._warned_narrowing = set(self._warned_nulls), set(self._warned_narrowing)
        new._warned_truncation = set(self._warned_truncation)
        new._epochs, new._epoch_base = n, base
        return new

    @property
    def input_schema(self) -> Optional[Schema]:
        """Schema of the data the loader reads, before the mapped workflow (merlin-dataloader's
        ``input_schema``; :attr:`output_schema` is that of the emitted columns): every column of the
        input, the loader's labels tagged ``target`` and, where no workflow is mapped (the names
        are then the input's), its categorical / continuous columns tagged so, as NVTabular's
        loaders tag the dataset's schema. None when the input has no schema. The dataset's own
        schema is not changed."""
        self._ensure_ready()
        schema = self._source.schema
        if schema is None:
            return None
        tags = {n: Tags.TARGET for n in self._label_names}
        if self.workflow is None:
            tags.update({n: Tags.CATEGORICAL for n in self._cat_names})
            tags.update({n: Tags.CONTINUOUS for n in self._cont_names})
        return Schema([c.with_tags(tags[c.name]) if c.name in tags else c for c in schema])

    @input_schema.setter
    def input_schema(self, value: Schema) -> None:
        """merlin-dataloader's ``loader.input_schema = schema``: the loader reads with ``value`` as
        the data's schema, as if passed as ``schema=``, and its columns tagged ``categorical`` /
        ``continuous`` / ``target`` become :attr:`cat_names` / :attr:`cont_names` /
        :attr:`label_names` (a target is never a feature), replacing the names given before.
        ``RuntimeError`` once an epoch has started (merlin's message), ``ValueError`` for a value
        that is not a :class:`tabprep.Schema`."""
        if self._started and not self._done:
            raise RuntimeError("Setting the input_schema after the dataloader has started is not supported. If you "
                               "would like to change the input_schema please change before reading the first batch. ")
        if not isinstance(value, Schema):
            raise ValueError(f"schema value on loader must be of type tabprep.Schema (merlin's Schema); "
                             f"provided: {type(value)}")
        labels = [c.name for c in value if Tags.TARGET in c.tags]
        cats = [c.name for c in value if c.is_categorical and c.name not in labels]
        conts = [c.name for c in value if c.is_continuous and c.name not in labels and c.name not in cats]
        with self._lock:
            self._reset_iteration()
            self._source.schema = value
            self._names_arg = (labels, cats, conts)
            self._ready = False
            self._plans = {}

    @property
    def schema(self) -> Optional[Schema]:
        """Deprecated in merlin-dataloader 23.08 (a warning naming ``input_schema`` /
        ``output_schema``): :attr:`input_schema`."""
        warnings.warn("This `schema` property is deprecated and will be removed in a future version. Please use "
                      "either the `input_schema` or `output_schema` property instead.", UserWarning, stacklevel=2)
        return self.input_schema
