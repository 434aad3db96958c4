"""Serving: apply a fitted workflow to live requests, in process, over HTTP, or inside a Keras model.

>>> from tabprep.serving import ServingTransform
>>> st = ServingTransform(tp.Workflow.load("wf/"), exclude=["label"])
>>> st({"C1": 123, "I1": 4})            # {'C1': array([5]), 'I1': array([0.43], dtype=float32)}

* :class:`ServingTransform`: numpy kernels compiled from the fitted statistics;
* ``tabprep serve WF_DIR``: the same over HTTP (:mod:`tabprep.serving.http`, Starlette + uvicorn);
* :func:`to_keras`: the workflow as Keras layers, saved inside the model (:mod:`tabprep.serving.keras_export`).
"""
from .columns import ServingInputError
from .kernels import REFUSED, ServingBuildError, register_kernel
from .transform import ServingTransform


def to_keras(workflow, outputs=None, exclude=()):  # noqa: ANN001, ANN201 - TensorFlow is imported lazily
    """The workflow as a Keras model taking raw features; see :func:`tabprep.serving.keras_export.to_keras`."""
    from .keras_export import to_keras as _to_keras

    return _to_keras(workflow, outputs=outputs, exclude=exclude)


__all__ = ["ServingTransform", "ServingInputError", "ServingBuildError", "register_kernel", "REFUSED", "to_keras"]
