"""Declarative workflow specs: a YAML or JSON file describing the graph, for the CLI and version control.

A spec lists **features**; each feature selects columns and applies a chain of ops. The
workflow's output is every feature's output side by side, in the order listed::

    features:
      - columns: [C1, C2]
        ops: [{Categorify: {freq_threshold: 2}}]
      - columns: [I1, I2]
        ops: [FillMissing, {Clip: {min_value: 0}}, LogOp, Normalize]
      - columns: [label]

is ``(["C1", "C2"] >> Categorify(freq_threshold=2)) + (["I1", "I2"] >> FillMissing() >>
Clip(min_value=0) >> LogOp() >> Normalize()) + ["label"]``.

Feature keys:

* ``columns`` (required): a list of

  - column names (``C1``; quote names YAML would read as numbers or booleans: ``"1"``, ``"yes"``),
  - groups of names sharing one vocabulary (``[[user_a, user_b]]``, as in Python),
  - references to another feature's output: ``{feature: NAME}``; this is how merges of chains,
    ``(A >> op) + B >> op2``, are written.

* ``ops``: the chain, applied in order. Each step is an op name (``LogOp``), a one-key mapping
  ``{Op: {param: value}}`` with the op's ``__init__`` parameters, or ``{drop: [columns]}``
  (remove columns from the chain's output). Ops are looked up among registered ops
  (:func:`tabprep.ops.registered_ops`); a custom op class can be named ``"package.module:Class"``.
  Parameters holding a function (LambdaOp ``f``, Filter ``f``, Rename ``f``) are written
  ``{import: "package.module:function"}``.
* ``name``: an identifier other features refer to with ``{feature: NAME}``.
* ``output``: whether the feature's columns are part of the workflow's output. Default: true,
  except for features that other features refer to (those are intermediate steps).

Example of a merge, ``(["a", "b"] >> FillMissing()) + ["c"] >> Normalize()``::

    features:
      - name: filled
        columns: [a, b]
        ops: [FillMissing]
      - columns: [{feature: filled}, c]
        ops: [Normalize]

Top-level keys besides ``features``: ``version`` (the spec format, 1) and ``description``.

Errors (:class:`SpecError`, a ``ValueError``) name the file and line, where in the spec, and the
fix: close matches for unknown ops, parameters and feature names; the op's signature for bad
parameters.

:func:`workflow_to_spec` is the inverse: any graph made of registered ops (or importable op
classes) with JSON parameters round-trips. Ops holding a lambda or a local function cannot be
written to a spec and are refused with a message saying so.

This module is the public face of specs; the work is done in :mod:`.spec_read` (parsing, line
numbers, :class:`SpecError`), :mod:`.spec_build` (spec -> workflow, validation and hints) and
:mod:`.spec_write` (workflow -> spec, YAML/JSON text).
"""
from .spec_build import op_signature, workflow_from_spec
from .spec_read import (DROP_STEP, FEATURE_KEYS, REF_KEY, SPEC_VERSION, TOP_KEYS, SpecError,
                        read_spec)
from .spec_write import spec_to_json, spec_to_yaml, workflow_to_spec

__all__ = ["SpecError", "read_spec", "workflow_from_spec", "workflow_to_spec", "op_signature",
           "spec_to_yaml", "spec_to_json", "SPEC_VERSION", "TOP_KEYS", "FEATURE_KEYS", "DROP_STEP", "REF_KEY"]
