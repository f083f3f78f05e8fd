"""The catalogue's one error type, shared by its services and the task-folder module."""

from __future__ import annotations


class CatalogueError(ValueError):
    """Input the catalogue refuses; the message says what is wrong and where."""
