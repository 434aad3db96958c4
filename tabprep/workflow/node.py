"""The column graph (:class:`Node`), defined in :mod:`tabprep.ops.node` next to the ops whose ``>>``
builds it (so ``ops`` never imports ``workflow``); re-exported here, where the workflow uses it."""
from ..ops.node import (Node, as_node, describe_branch, iter_nodes, shadowed_columns, upstream_ids,  # noqa: F401
                        warn_shadowed)

__all__ = ["Node", "as_node", "describe_branch", "iter_nodes", "shadowed_columns", "upstream_ids", "warn_shadowed"]
