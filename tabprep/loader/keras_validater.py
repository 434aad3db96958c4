"""``KerasSequenceValidater``: validation metrics of a :class:`~tabprep.loader.tensorflow.KerasSequenceLoader`
at each epoch's end (part of :mod:`tabprep.loader.tensorflow`, which imports it after Keras is set up;
import it from there or from :mod:`tabprep.loader.keras`)."""
from __future__ import annotations

import logging
from typing import Any, Dict, Optional

import keras

log = logging.getLogger("tabprep.loader.tensorflow")


class KerasSequenceValidater(keras.callbacks.Callback):
    """Adds ``val_<name>`` entries (loss and compiled metrics) to the logs at each epoch end.

    The validation loader (a :class:`KerasSequenceLoader`, usually ``shuffle=False``) is
    iterated for exactly one epoch through the model's compiled test step (metrics accumulated
    over the epoch; tensors passed as they come, so GPU batches stay on the GPU: no ``tf.data``
    staging). The training metrics' state is reset (fit resets it at the next epoch anyway).

    Args:
        dataloader: the validation loader (anything iterating ``(features, labels)``).
        steps: evaluate at most this many batches per epoch (default: the whole loader).
    """

    def __init__(self, dataloader: Any, steps: Optional[int] = None) -> None:
        super().__init__()
        self.dataloader = dataloader
        self.steps = steps

    def evaluate(self) -> Dict[str, float]:
        """Loss and metrics of the model on one epoch of the validation loader."""
        if keras.backend.backend() != "tensorflow":
            # JAX / torch trainers have no per-batch test function to call from here: Keras'
            # own evaluate (as fit runs it for validation_data) iterates the loader once
            results = self.model.evaluate(self.dataloader, steps=self.steps, verbose=0, return_dict=True)
            return {k: float(v) for k, v in results.items()}
        seen = 0
        for i, (x, y) in enumerate(self.dataloader):
            if self.steps is not None and i >= self.steps:
                break
            if i == 0:
                # builds the test function and resets the metrics, then runs the first batch
                self.model.test_on_batch(x, y)
            else:
                # accumulates into the same metric states (test_on_batch would reset them)
                self.model.test_function(iter([(x, y, None)]))
            seen += 1
        if not seen:
            raise ValueError("the validation loader yielded no batch")
        results = self.model.get_metrics_result()
        return {k: float(v) for k, v in results.items()}

    def on_epoch_end(self, epoch: int, logs: Optional[Dict[str, Any]] = None) -> None:
        results = self.evaluate()
        if logs is not None:
            for name, value in results.items():
                logs["val_" + name] = value
        log.info("epoch %d validation: %s", epoch, {k: round(v, 6) for k, v in results.items()})
