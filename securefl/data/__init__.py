"""Datasets, party tables and partitioners."""

from securefl.data.split import STFL_FRACTIONS, VerticalSplit, stfl_split
from securefl.data.tables import read_party_csv, write_csv_atomically
from securefl.data.vertical import PartyTable, VerticalDataset

__all__ = [
    "STFL_FRACTIONS",
    "PartyTable",
    "VerticalDataset",
    "VerticalSplit",
    "read_party_csv",
    "stfl_split",
    "write_csv_atomically",
]
