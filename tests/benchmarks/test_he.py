"""The HE benchmark refuses insecure parameters and runs end to end on a tiny shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import he as bench
from protocols.errors import InputError


def test_benchmark_refuses_insecure_paillier_keys(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        bench.parse_args(["--key-bits", "1024", "--json", str(tmp_path / "he.json")])
    with pytest.raises(InputError, match="insecure"):
        bench.Config(quick=True, json_path=tmp_path, markdown_path=tmp_path, paillier_key_bits=1536)


def test_markdown_goes_beside_the_json_unless_named(tmp_path: Path) -> None:
    # a scratch --json must not overwrite the committed benchmarks/results/he.md
    scratch = bench.parse_args(["--quick", "--json", str(tmp_path / "r.json")])
    named = bench.parse_args(["--json", str(tmp_path / "r.json"), "--markdown", str(tmp_path / "t.md")])

    assert scratch.markdown_path == tmp_path / "r.md" and named.markdown_path == tmp_path / "t.md"


def test_benchmark_runs_and_writes_labelled_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = bench.Config(quick=True, json_path=tmp_path / "he.json", markdown_path=tmp_path / "he.md",
                          batch=4, d_in=2, d_out=3, phe_samples=2, repeats=1)
    monkeypatch.setattr(bench, "parse_args", lambda argv: config)

    bench.main(["--quick"])

    result = json.loads(config.json_path.read_text())
    assert result["quick"] is True and "quick run" in config.markdown_path.read_text()
    ops = {(r["backend"], r["op"]) for r in result["results"]}
    assert ("paillier", "matmul") in ops and ("ckks", "encrypt") in ops and ("phe", "decrypt") in ops
    assert all(r["values_per_s"] > 0 for r in result["results"])


@pytest.mark.parametrize("field, value", [("batch", 0), ("repeats", -1), ("d_out", 2.5)])
def test_non_positive_shape_is_refused_naming_the_field(tmp_path: Path, field: str, value: object) -> None:
    with pytest.raises(InputError, match=f"Config.{field} must be a positive int"):
        bench.Config(quick=True, json_path=tmp_path, markdown_path=tmp_path, **{field: value})
