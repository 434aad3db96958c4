"""Workflow graph, fitting and persistence."""
from .node import Node, as_node
from .workflow import Workflow

__all__ = ["Node", "Workflow", "as_node"]
