"""Every benchmark's ``--help`` is plain text: no reStructuredText from its docstring."""

import importlib

import pytest

BENCHMARKS = ("chfl", "chfl_reference", "gl", "gl_compare", "he", "he_projection", "latent_leakage", "leakage", "psi",
              "secagg", "splitnn_sensitivity", "stfl", "tdcd")


@pytest.mark.parametrize("name", BENCHMARKS)
def test_help_names_the_module_and_shows_no_markup(capsys, name):
    # Arrange
    main = importlib.import_module(f"benchmarks.{name}").main

    # Act
    with pytest.raises(SystemExit) as done:
        main(["--help"])

    # Assert
    text = capsys.readouterr().out
    assert done.value.code == 0 and text.startswith(f"usage: python -m benchmarks.{name}")
    assert not any(mark in text for mark in ("``", ":mod:", ":func:", ":class:"))
