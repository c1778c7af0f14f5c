"""The registered STFL datasets on the real files, when $SECUREFL_DATA points at them.

Row, column and label counts are the ones in the data README. give_credit is
rebuilt from Kaggle's raw file and compared with FATE's own give_credit test files.
"""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from securefl.data import DataFile, check_overlap, get_dataset, list_datasets, load_vertical
from securefl.data.registry import verify_file
from securefl.data.stfl_sets import GIVE_CREDIT_COLUMNS, fate_scaling

# The data README's fitted x = a * raw + b, to 6 significant digits.
README_GIVE_CREDIT = {
    "x0": (0.194328, -1.64261), "x1": (0.239849, -0.063793), "x2": (0.885138, -0.901283),
    "x3": (0.240664, -0.057852), "x4": (0.903328, -0.666126), "x5": (0.00400393, -0.0242176),
    "x6": (0.0676965, -3.5402), "x7": (0.238506, -0.100419), "x8": (0.000490722, -0.173228),
    "x9": (7.6034e-05, -0.40664),
}
FATE_TESTS = {
    "hetero": DataFile("stfl/give_credit_hetero_test.csv.gz",
                       "7e5447c69dd00e066fc75edcefc2cca76bb42ab76ab870263b86d190b12e2fc2"),
    "homo": DataFile("stfl/give_credit_homo_test.csv.gz",
                     "079e946e04666319b5a6772439034d62567706ed0bd1b025253e96494b8562ad"),
}


@pytest.fixture(scope="module")
def root() -> Path:
    value = os.environ.get("SECUREFL_DATA")
    if not value:
        pytest.skip("SECUREFL_DATA is not set: the real dataset files are not available")
    return Path(value)


@pytest.fixture(scope="module")
def give_credit(root):
    return load_vertical("give_credit", data_dir=root)


def test_registered_hashes_are_the_data_folders_sha256sums(root):
    sums = {}
    for line in (root / "SHA256SUMS").read_text().splitlines():
        digest, path = line.split(maxsplit=1)
        sums[path.removeprefix("./")] = digest
    # datasets missing from ../shared/data are registered without a checksum
    files = [f for name in list_datasets() if get_dataset(name).available for f in get_dataset(name).files]

    assert files and all(sums[f.path] == f.sha256 for f in files)
    assert all(sums[f.path] == f.sha256 for f in FATE_TESTS.values())


@pytest.mark.parametrize("name, n_rows, n_active, n_passive, counts", [
    ("breast", 569, 10, 20, [212, 357]),
    ("default_credit", 30000, 13, 10, [23364, 6636]),
])
def test_fate_splits_match_the_readme(root, name, n_rows, n_active, n_passive, counts):
    data = load_vertical(name, data_dir=root)

    active, (passive,) = data.active, data.passive
    assert data.name == name and get_dataset(name).n_rows == n_rows
    assert (active.n_rows, active.n_features, passive.n_rows, passive.n_features) == (
        n_rows, n_active, n_rows, n_passive)
    assert active.feature_names == tuple(f"x{i}" for i in range(n_active))
    assert np.bincount(active.labels).tolist() == counts
    assert active.ids == passive.ids  # FATE's guest and host files list the same ids in the same order
    assert check_overlap(data) == n_rows
    guest = pd.read_csv(root / get_dataset(name).files[0].path, dtype={"id": str})
    assert active.ids == tuple(guest["id"])
    np.testing.assert_array_equal(active.features, guest[list(active.feature_names)].to_numpy())


def test_breast_has_sklearns_labels_under_the_same_row_numbers(root):
    fate, sk = load_vertical("breast", data_dir=root), load_vertical("breast_sklearn")

    rows = np.array([int(i) for i in fate.active.ids])
    np.testing.assert_array_equal(fate.active.labels, sk.active.labels[rows])


def test_give_credit_is_rebuilt_from_the_raw_file(give_credit):
    active, (passive,) = give_credit.active, give_credit.passive
    assert (active.n_rows, active.n_features, passive.n_rows, passive.n_features) == (150000, 5, 150000, 5)
    assert active.feature_names == ("x0", "x1", "x2", "x3", "x4")
    assert passive.feature_names == ("x5", "x6", "x7", "x8", "x9")
    assert active.ids == passive.ids == tuple(str(i) for i in range(1, 150001))
    assert np.bincount(active.labels).tolist() == [139974, 10026]


@pytest.mark.parametrize("which, n_features", [("hetero", 5), ("homo", 10)])
def test_give_credit_equals_fates_test_files_on_their_ids(root, give_credit, which, n_features):
    fate = pd.read_csv(verify_file(root, FATE_TESTS[which], dataset="give_credit"), dtype={"id": str})
    assert len(fate) == 30000 and np.bincount(fate["y"]).tolist() == [27990, 2010]
    position = {v: i for i, v in enumerate(give_credit.active.ids)}
    rows = np.array([position[i] for i in fate["id"]])

    ours = np.hstack([give_credit.active.features, give_credit.passive[0].features])[rows, :n_features]

    np.testing.assert_array_equal(give_credit.active.labels[rows], fate["y"].to_numpy())
    np.testing.assert_allclose(ours, fate[[f"x{i}" for i in range(n_features)]].to_numpy(), rtol=0, atol=1e-5)


def test_give_credit_scaling_agrees_with_the_readme_coefficients(root):
    raw = pd.read_csv(root / "stfl" / "cs-training.csv.gz").fillna(0)
    values = raw[[column for _, column in GIVE_CREDIT_COLUMNS]].to_numpy(dtype=np.float64)

    mean, std = fate_scaling(values)

    for (name, _), m, s in zip(GIVE_CREDIT_COLUMNS, mean, std):
        a, b = README_GIVE_CREDIT[name]
        assert 1 / s == pytest.approx(a, rel=1e-5) and -m / s == pytest.approx(b, rel=1e-5, abs=1e-6)
