"""Datasets, party tables and partitioners."""

from securefl.data.tables import read_party_csv, write_csv_atomically

__all__ = ["read_party_csv", "write_csv_atomically"]
