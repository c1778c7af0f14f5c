"""Registry entries of the TDCD paper's datasets and the substitutes stored here.

The paper's convex experiment uses UCI Superconductivity, which is not stored here: it
is registered with its standard file name (``available=False``, last column the
target ``critical_temp``) so it runs wherever the file exists. Three UCI regression
sets stand in for it (../shared/data/README.md), labelled as substitutes in results.
The non-convex experiment uses MNIST; only its 10,000 test images are stored, so
``mnist`` is those images, split per seed into training and test rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from protocols.errors import InputError
from securefl.data.entries import DataFile, DatasetEntry
from securefl.data.tdcd_sets import TieredTable, load_mnist_idx, load_regression_csv

_UCI = "treforevans/uci_datasets:uci_datasets/{}/data.csv.gz @ f0737523712fe66a1640e4b980b927e8490b58eb"
TDCD_DEFAULT = "diabetes_sklearn"
"""The TDCD dataset that needs no files."""
_SUBSTITUTE = "a substitute for the paper's Superconductivity (not stored here)"


def load_diabetes_sklearn(paths: Sequence[Path] = ()) -> TieredTable:
    """scikit-learn's bundled diabetes set (442 rows, 10 features, a disease-progression target)."""
    from sklearn.datasets import load_diabetes  # imported here: sklearn is slow to import

    bunch = load_diabetes()
    return TieredTable("diabetes_sklearn", "regression", np.asarray(bunch.data, dtype=np.float64),
                       np.asarray(bunch.target, dtype=np.float64))


def load_superconductivity(paths: Sequence[Path]) -> TieredTable:
    """UCI Superconductivity ``train.csv``: a header row, 81 features, the target last (checked: the
    file is registered without a checksum, so its shape is what tells a wrong file; the registry's
    ``load_registered`` checks its row count against the entry's)."""
    table = load_regression_csv(paths, header=True)
    if table.x.shape[1] != 81:
        raise InputError(f"{paths[0]}: {table.x.shape[1]} features where Superconductivity has 81;"
                         " is it the right file?")
    return table


def _regression(name: str, uci: str, description: str, n_rows: int, sha256: str) -> DatasetEntry:
    return DatasetEntry(
        name=name, paper="TDCD", paper_name="Superconductivity (substitute)", kind="tdcd",
        description=f"{description}; {_SUBSTITUTE}",
        files=(DataFile(f"tdcd/uci_{uci}.csv.gz", sha256),), source=_UCI.format(uci),
        licence="repository: MIT; UCI data: CC BY 4.0" if uci == "keggundirected" else "repository: MIT",
        parties="features split into contiguous blocks by silo, rows dealt to each silo's clients (tiered_split)",
        n_rows=n_rows, loader=load_regression_csv)


TDCD_ENTRIES: tuple[DatasetEntry, ...] = (
    DatasetEntry(
        name="diabetes_sklearn", paper="TDCD", paper_name="(bundled; not in the paper)", kind="tdcd",
        description="scikit-learn's bundled diabetes regression set (442 rows, 10 features; target: disease"
                    " progression after one year); needs no files",
        files=(), source="sklearn.datasets.load_diabetes (Efron et al. 2004)", licence="BSD-3-Clause (scikit-learn)",
        parties="as the substitutes", n_rows=442, loader=load_diabetes_sklearn),
    DatasetEntry(
        name="superconductivity", paper="TDCD", paper_name="Superconductivity", kind="tdcd", available=False,
        description="UCI Superconductivity train.csv (81 features, target critical_temp); not stored here",
        files=(DataFile("tdcd/superconductivity_train.csv", None),),
        source="UCI ML repository, superconduct.zip: train.csv", licence="CC BY 4.0",
        parties="as the substitutes", n_rows=21263, loader=load_superconductivity),
    _regression("tdcd_pol", "pol", "Pole telecommunications (26 features)", 15000,
                "1c16126352954571e78f52d5a9d1b947a38655885d7cadd9407a4c9615fe4e04"),
    _regression("tdcd_elevators", "elevators", "Elevators (18 features)", 16599,
                "e39bc18a80ec3611e4fd76d0f86ee377e96ba21b568b9997576d538dafe56b7b"),
    _regression("tdcd_kegg", "keggundirected", "KEGG Metabolic Reaction Network, undirected (27 features)", 63608,
                "117419270e50f581df18bf996ffc8b6bf1bb76c9f3640331ac9d6e64cff63d4e"),
    DatasetEntry(
        name="mnist", paper="TDCD", paper_name="MNIST", kind="tdcd",
        description="MNIST's 10,000 test images and labels (the training images are not stored here), split per"
                    " seed into training and test rows; 28x28 images, 10 classes",
        files=(DataFile("tdcd/mnist/t10k-images-idx3-ubyte.gz",
                        "167310007f03058885c7e95e6c0b19c20de5c7fd3031f4cbdadc9014a523d80b"),
               DataFile("tdcd/mnist/t10k-labels-idx1-ubyte.gz",
                        "fc607395669ec21321ea83e4b82c0544b7e8e63ff5b34337c06bc0a17cc0da3c")),
        source="kelas/mnist @ 283b387221ab46655e600cfcc25d843bb14292b9", licence="usually listed as CC BY-SA 3.0",
        parties="image columns split by silo (N=2: two 28x14 halves), rows dealt to each silo's clients",
        n_rows=10000, loader=load_mnist_idx),
)

__all__ = ["TDCD_DEFAULT", "TDCD_ENTRIES", "load_diabetes_sklearn", "load_superconductivity"]
