"""The type aliases the package's signatures share (private module).

They are ``Any`` to the type checker: a pytree's structure is the caller's choice. The names
say what a function expects. Each public module that takes one re-exports it.

* ``PyTree``: any pytree of arrays: parameters, optimiser state, a batch ``(x, y)``.
* ``Batch``: one array, or a pytree of arrays with the same leading size (the examples),
  e.g. ``(x, y)``; what ``sharding.split_batch`` and ``shard_batch`` split.
* ``Dataset``: a whole data set in the same form as a ``Batch``; what ``data.batch_at``
  draws batches from.

A classification batch with its labels is ``models.LabeledBatch``, a precise tuple type.
"""

from __future__ import annotations

from typing import Any, TypeAlias

__all__ = ["PyTree", "Batch", "Dataset"]

#: Any pytree of arrays: parameters, optimiser state, a batch ``(x, y)``.
PyTree: TypeAlias = Any
#: One array, or a pytree of arrays with the same leading size (e.g. ``(x, y)``).
Batch: TypeAlias = Any
#: A data set: one array, or a pytree of arrays with the same leading size (e.g. ``(x, y)``).
Dataset: TypeAlias = Any
