"""The dataset registry: named datasets with their files, checksums, source, licence and parties.

:data:`REGISTRY` is a read-only mapping of frozen :class:`DatasetEntry` values,
the only module-level state. Files are read from a data folder: the one passed
explicitly (the CLI's ``--data-dir``), else ``$SECUREFL_DATA``. Every file is
checked against its sha256 on each load, so a truncated or different version of
a file is an error rather than a silently different benchmark. A file registered
without a checksum (one this project has never seen) is checked by the row count
the registry gives for it instead, and by its loader's checks of the shape.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Mapping, Sequence

from protocols.errors import InputError
from securefl.data.chfl_sets import TabularDataset
from securefl.data.entries import DataFile, DatasetEntry
from securefl.data.horizontal_sets import HORIZONTAL_ENTRIES
from securefl.data.tdcd_entries import TDCD_ENTRIES
from securefl.data.tdcd_sets import TieredTable
from securefl.data.stfl_sets import load_breast_sklearn, load_fate_pair, load_give_credit
from securefl.data.vertical import VerticalDataset

DATA_ENV = "SECUREFL_DATA"
DEFAULT_DATASET = "breast_sklearn"
"""The dataset that needs no files."""

_FATE = "FederatedAI/FATE:examples/data/{} @ 5a06d9e4c4cd7ab97a5c8357828adbffaca87785"


_ENTRIES = (
    DatasetEntry(
        name="breast",
        paper="STFL",
        paper_name="breast",
        description="Breast Cancer Wisconsin (Diagnostic), FATE's vertical split, features scaled by FATE;"
                    " y: 0 = malignant (212), 1 = benign (357)",
        files=(DataFile("stfl/breast_hetero_guest.csv.gz",
                        "880c25dcf4874ef3be7f15daee7085c132b276a983bd53e7f7547ebf0d00fb42"),
               DataFile("stfl/breast_hetero_host.csv.gz",
                        "6e9e98999d161b4820af99ad208b00873145eee5435b38c1d145440b52eab040")),
        source=f"{_FATE.format('breast_hetero_guest.csv')}; {_FATE.format('breast_hetero_host.csv')}",
        licence="FATE repository: Apache-2.0; UCI data: CC BY 4.0",
        parties="active = FATE guest file (id, y, x0-x9); passive = FATE host file (id, x0-x19)",
        n_rows=569,
        loader=load_fate_pair,
    ),
    DatasetEntry(
        name="default_credit",
        paper="STFL",
        paper_name="payment",
        description="Default of Credit Card Clients (the STFL paper's 'payment'), FATE's vertical split,"
                    " features scaled by FATE; y = default next month (0: 23364, 1: 6636)",
        files=(DataFile("stfl/default_credit_hetero_guest.csv.gz",
                        "3a3e6a0e929323c0470cf2b7c666fef5cbb2c31cbd1672f7876f54c9b6466a12"),
               DataFile("stfl/default_credit_hetero_host.csv.gz",
                        "b13d50226dfdc31da8a7220353bb80d39bfb4b03cd7f2fc9423483bac828d7c5")),
        source=(f"{_FATE.format('default_credit_hetero_guest.csv')};"
                f" {_FATE.format('default_credit_hetero_host.csv')}"),
        licence="FATE repository: Apache-2.0; UCI data: CC BY 4.0",
        parties="active = FATE guest file (id, y, x0-x12); passive = FATE host file (id, x0-x9)",
        n_rows=30000,
        loader=load_fate_pair,
    ),
    DatasetEntry(
        name="give_credit",
        paper="STFL",
        paper_name="credit",
        description="Give Me Some Credit (the STFL paper's 'credit'): FATE's give_credit vertical split"
                    " rebuilt from Kaggle's raw cs-training.csv: each column standardised as FATE did"
                    " (NA as 0, mean and population std over all 150000 rows, rounded to 6 decimals);"
                    " y = SeriousDlqin2yrs (0: 139974, 1: 10026)",
        files=(DataFile("stfl/cs-training.csv.gz",
                        "b2d5b080b10ca9d559fa799b1ff5530fe20f5c90576c13a34c8bde981b7c6582"),),
        source="SureshThyagara1/CYO---Kaggle-Give-Me-Some-Credit:Data/cs-training.csv.zip"
               " @ a83342095669125411d252e2c07cc10cb44e75c9 (member cs-training.csv); checked against"
               f" {_FATE.format('give_credit_homo_test.csv')}",
        licence="Kaggle competition rules (GiveMeSomeCredit, 2011); source repository: no licence file",
        parties="active = id (unnamed first column), y, x0-x4 (FATE guest: open credit lines, 90 days"
                " late, real-estate loans, 60-89 days late, dependents); passive = id, x5-x9 (FATE host:"
                " revolving utilisation, age, 30-59 days late, debt ratio, monthly income)",
        n_rows=150000,
        loader=load_give_credit,
    ),
    DatasetEntry(
        name="breast_sklearn",
        paper="STFL",
        paper_name="breast",
        description="scikit-learn's bundled Breast Cancer Wisconsin (Diagnostic), unscaled; labels kept as"
                    " sklearn has them: 0 = malignant (212), 1 = benign (357); needs no files",
        files=(),
        source="scikit-learn sklearn.datasets.load_breast_cancer (UCI Breast Cancer Wisconsin"
               " (Diagnostic))",
        licence="scikit-learn: BSD-3-Clause; UCI data: CC BY 4.0",
        parties="IDs are the row numbers '0'..'568'; active = label + the first 10 features (the 'mean'"
                " ones); passive = the other 20 ('error' and 'worst')",
        n_rows=569,
        loader=load_breast_sklearn,
    ),
)

REGISTRY: Mapping[str, DatasetEntry] = MappingProxyType({entry.name: entry
                                                         for entry in (*_ENTRIES, *HORIZONTAL_ENTRIES,
                                                                       *TDCD_ENTRIES)})
"""Every registered dataset by name (read-only)."""


def list_datasets(kind: str | None = None) -> list[str]:
    """The registered dataset names (of ``kind``, if given), sorted."""
    return sorted(name for name, entry in REGISTRY.items() if kind is None or entry.kind == kind)


def get_dataset(name: str) -> DatasetEntry:
    """The registry entry for ``name``; an unknown name is an :class:`InputError` listing the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise InputError(f"unknown dataset {name!r}; known datasets: {', '.join(list_datasets())}") from None
    except TypeError:
        raise InputError(f"a dataset name must be a str, got {type(name).__name__}") from None


def data_dir(explicit: str | os.PathLike | None = None, *, dataset: str | None = None) -> Path:
    """The data folder: ``explicit`` if given, else ``$SECUREFL_DATA``; an error when neither is set.

    ``dataset`` only names the dataset in the error message.
    """
    what = f"dataset {dataset!r} needs its files" if dataset else "datasets need their files"
    if explicit is not None and str(explicit) != "":
        root = Path(explicit).expanduser()
        origin = f"data folder {root}"
    elif os.environ.get(DATA_ENV):
        root = Path(os.environ[DATA_ENV]).expanduser()
        origin = f"{DATA_ENV}={root}"
    else:
        raise InputError(f"{what} under a data folder: pass --data-dir or set {DATA_ENV}")
    if not root.is_dir():
        raise InputError(f"{origin} is not a folder ({what} there)")
    return root


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_state(root: Path, data_file: DataFile, *, verify: bool = True) -> tuple[str, str | None]:
    """Where the file stands under ``root``, and its sha256 when read: ``("missing", None)``,
    ``("present", None)`` (not checked: ``verify`` off, or no registered checksum),
    ``("verified", sha)`` or ``("damaged", sha)``."""
    path = root / data_file.path
    if not path.is_file():
        return "missing", None
    if not verify or data_file.sha256 is None:
        return "present", None
    actual = file_sha256(path)
    return ("verified" if actual == data_file.sha256 else "damaged"), actual


def verify_file(root: Path, data_file: DataFile, *, dataset: str) -> Path:
    """The file's path under ``root`` after checking that it exists and has the registered sha256."""
    path = root / data_file.path
    state, actual = file_state(root, data_file)
    if state == "missing":
        raise InputError(f"dataset {dataset!r}: file {path} not found (expected as {data_file.path}"
                         " under the data folder)")
    if state == "damaged":
        raise InputError(f"dataset {dataset!r}: {path} has sha256 {actual}, but the registry expects"
                         f" {data_file.sha256}; the file is damaged or a different version")
    return path


def verified_paths(entry: DatasetEntry, data_dir: str | os.PathLike | None = None) -> tuple[Path, ...]:
    """The entry's files under the data folder, each checked against its sha256 (none: no folder needed)."""
    if not entry.files:
        return ()
    root = _resolve_data_dir(data_dir, dataset=entry.name)
    return tuple(verify_file(root, f, dataset=entry.name) for f in entry.files)


def load_registered(name: str, *, kind: str, data_dir: str | os.PathLike | None = None) -> object:
    """Load the registered dataset ``name`` of ``kind`` ("vertical", "chfl" or "gl") from its verified files."""
    entry = get_dataset(name)
    if entry.kind != kind:
        raise InputError(f"dataset {name!r} is a {entry.kind} dataset, not {kind}; {kind} datasets:"
                         f" {', '.join(list_datasets(kind))}")
    paths = verified_paths(entry, data_dir)
    loaded = entry.loader(paths)
    _check_rows(entry, paths, loaded)
    return loaded


def _check_rows(entry: DatasetEntry, paths: Sequence[Path], loaded: object) -> None:
    """Refuse a file registered without a checksum whose rows differ from the entry's ``n_rows``: no
    checksum tells a truncated file there, and it would run as a smaller benchmark without a word."""
    unchecked = [str(path) for path, data_file in zip(paths, entry.files) if data_file.sha256 is None]
    found = _row_count(loaded)
    if unchecked and entry.n_rows and found is not None and found != entry.n_rows:
        raise InputError(f"dataset {entry.name!r}: {', '.join(unchecked)} has {found} rows where the registry"
                         f" expects {entry.n_rows}; is the file truncated or a different version?")


def _row_count(loaded: object) -> int | None:
    """The rows of a loaded table (None for a kind without one row count, e.g. GL's clients)."""
    if isinstance(loaded, TabularDataset):
        return len(loaded.labels)
    if isinstance(loaded, TieredTable):
        return len(loaded.y)
    if isinstance(loaded, VerticalDataset):
        return loaded.active.n_rows
    return None


def load_vertical(name: str, *, data_dir: str | os.PathLike | None = None) -> VerticalDataset:
    """Load the registered vertical dataset ``name``, verifying each file's checksum first.

    ``data_dir`` (else ``$SECUREFL_DATA``) is only needed by datasets with files.
    """
    entry = get_dataset(name)
    loaded = load_registered(name, kind="vertical", data_dir=data_dir)
    if loaded.active.n_rows != entry.n_rows:
        raise InputError(f"dataset {entry.name!r}: loaded {loaded.active.n_rows} rows, the registry"
                         f" says {entry.n_rows}")
    return replace(loaded, name=entry.name, description=entry.description)


_resolve_data_dir = data_dir  # load_vertical's keyword argument shadows the function's name
