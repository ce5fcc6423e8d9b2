"""Loaders: read checkpoint histories from SQLite, Postgres and Parquet into the store."""

from loaders.base import ImportOptions
from loaders.importer import import_source

__all__ = ["ImportOptions", "import_source"]
