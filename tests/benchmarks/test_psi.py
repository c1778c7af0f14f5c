"""The PSI benchmark script runs end to end on tiny sets and writes both files."""

import json

import pytest

from benchmarks.psi import main, make_sets, parse_args


def test_sets_have_the_requested_overlap():
    left, right, common = make_sets(1000, overlap=0.5, seed=3)

    assert len(left) == len(right) == 1000 and len(set(left) | set(right)) == 1500
    assert common == len(set(left) & set(right)) == 500


def test_quick_is_small_and_labelled(tmp_path):
    cfg = parse_args(["--quick", "--skip-openmined", "--json", str(tmp_path / "r.json")])

    assert cfg.quick and max(cfg.sizes) <= 10_000


def test_markdown_goes_beside_the_json_unless_named(tmp_path):
    # a scratch --json must not overwrite the committed benchmarks/results/psi.md
    scratch = parse_args(["--quick", "--skip-openmined", "--json", str(tmp_path / "r.json")])
    named = parse_args(["--skip-openmined", "--json", str(tmp_path / "r.json"), "--markdown", str(tmp_path / "t.md")])

    assert scratch.markdown_path == tmp_path / "r.md" and named.markdown_path == tmp_path / "t.md"


def test_benchmark_writes_json_and_markdown(tmp_path):
    out, md = tmp_path / "psi.json", tmp_path / "psi.md"

    code = main(["--sizes", "200", "--quick", "--skip-openmined", "--json", str(out), "--markdown", str(md)])

    report = json.loads(out.read_text())
    row = report["results"][0]
    assert code == 0 and report["quick"] is True
    assert row["ours"]["correct"] and "openmined" not in row
    assert "quick run" in md.read_text() and "| 200 |" in md.read_text()


def test_benchmark_compares_with_openmined(tmp_path):
    pytest.importorskip("private_set_intersection.python",
                        reason="OpenMined PSI, the comparison peer, is the optional 'bench' extra")
    out, md = tmp_path / "psi.json", tmp_path / "psi.md"

    code = main(["--sizes", "200", "--quick", "--json", str(out), "--markdown", str(md)])

    row = json.loads(out.read_text())["results"][0]
    assert code == 0 and row["ours"]["correct"] and row["openmined"]["correct"] and row["speedup"] > 0


def test_missing_openmined_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("benchmarks.psi.openmined_available", lambda: False)
    out, md = tmp_path / "psi.json", tmp_path / "psi.md"

    with pytest.raises(SystemExit) as exit_info:
        main(["--sizes", "200", "--quick", "--json", str(out), "--markdown", str(md)])

    assert exit_info.value.code == 2 and not out.exists() and not md.exists()
    assert "--skip-openmined" in capsys.readouterr().err
