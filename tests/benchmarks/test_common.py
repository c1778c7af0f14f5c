"""benchmarks.common: the --datasets parsing every benchmark shares."""

import argparse

import pytest

from benchmarks.common import dataset_names

KNOWN = ("breast", "default_credit", "give_credit")


def test_dataset_names_splits_and_strips_the_list():
    # Arrange
    parser = argparse.ArgumentParser(prog="bench")
    # Act
    names = dataset_names(parser, " breast, give_credit ,", KNOWN)
    # Assert
    assert names == ("breast", "give_credit")


@pytest.mark.parametrize(("value", "message"), [
    ("breast,mnist", "unknown dataset 'mnist'; choose from breast, default_credit, give_credit"),
    (" , ", "--datasets names no dataset"),
])
def test_a_bad_dataset_list_is_a_one_line_usage_error(capsys, value, message):
    # Arrange
    parser = argparse.ArgumentParser(prog="bench")
    # Act
    with pytest.raises(SystemExit) as exit_info:
        dataset_names(parser, value, KNOWN)
    # Assert
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"bench: error: {message}"
