"""Datasets, party tables and partitioners."""

from securefl.data.loaders import check_overlap, load_party_csvs
from securefl.data.registry import (DEFAULT_DATASET, REGISTRY, DataFile, DatasetEntry, data_dir, get_dataset,
                                    list_datasets, load_vertical)
from securefl.data.split import STFL_FRACTIONS, VerticalSplit, split_ids, stfl_split, without_ids
from securefl.data.tables import read_party_csv, write_csv_atomically
from securefl.data.vertical import PartyTable, VerticalDataset

__all__ = [
    "DEFAULT_DATASET",
    "REGISTRY",
    "STFL_FRACTIONS",
    "DataFile",
    "DatasetEntry",
    "PartyTable",
    "VerticalDataset",
    "VerticalSplit",
    "check_overlap",
    "data_dir",
    "get_dataset",
    "list_datasets",
    "load_party_csvs",
    "load_vertical",
    "read_party_csv",
    "split_ids",
    "stfl_split",
    "without_ids",
    "write_csv_atomically",
]
