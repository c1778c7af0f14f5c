"""MKL's run-to-run reproducibility is asked for by the command line and the benchmarks, never forced."""

from __future__ import annotations

import os

import pytest

from securefl.runtime.reproducible import ENV, SETTING, reproducible_blas


def test_sets_strict_reproducibility_when_unset(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)

    assert reproducible_blas() == SETTING == os.environ[ENV] == "AUTO,STRICT"


def test_leaves_a_users_own_setting_alone(monkeypatch):
    monkeypatch.setenv(ENV, "AVX2")

    assert reproducible_blas() == "AVX2" and os.environ[ENV] == "AVX2"


def test_the_command_line_asks_for_it_before_running_a_command(monkeypatch):
    from securefl.cli import main

    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert os.environ[ENV] == SETTING


def test_every_benchmark_asks_for_it_before_its_main(monkeypatch):
    from benchmarks.common import run_main

    monkeypatch.delenv(ENV, raising=False)
    seen = []

    assert run_main(lambda: seen.append(os.environ.get(ENV)), "benchmarks.x") == 0
    assert seen == [SETTING]
