"""``python -m benchmarks.gl`` end to end on the real heart files: one seed, every method, a short schedule."""

from __future__ import annotations

import json
import os

import pytest

from benchmarks.gl import METHODS, main

NEEDS_DATA = pytest.mark.skipif(not os.environ.get("SECUREFL_DATA"), reason="SECUREFL_DATA is not set (heart files)")
CLIENTS = {"cleveland", "sa", "faisalabad"}


@pytest.fixture(scope="module")
def heart_run(tmp_path_factory):
    """One quick heart run (seed 0, 2 batches per local epoch), its JSON and Markdown."""
    out = tmp_path_factory.mktemp("gl") / "gl.json"
    code = main(["--quick", "--datasets", "gl_heart", "--heart-seeds", "1", "--batches", "2", "--workers", "1",
                 "--json", str(out)])
    return code, json.loads(out.read_text()), out.with_suffix(".md").read_text()


@NEEDS_DATA
def test_every_method_runs_once_and_scores_every_client_on_its_test_rows(heart_run):
    # Arrange / Act: the module's run
    code, result, _ = heart_run

    # Assert
    heart = result["datasets"]["gl_heart"]
    assert code == 0 and result["quick"] is True
    assert sorted(r["method"] for r in heart["runs"]) == sorted(METHODS["gl_heart"])
    for run in heart["runs"]:
        clients = run["metrics"]["clients"]
        assert set(clients) == CLIENTS
        assert all(c["evaluated_on"] == "test" and 0.0 <= c["auroc"] <= 1.0 for c in clients.values())


@NEEDS_DATA
def test_the_schedule_and_seed_asked_for_are_the_ones_recorded(heart_run):
    # Arrange / Act
    _, result, markdown = heart_run

    # Assert
    heart = result["datasets"]["gl_heart"]
    assert heart["settings"]["batches"] == 2 and heart["seeds"] == [0]
    assert "quick run" in markdown.splitlines()[0]
    assert "10 epochs x 2 batches per local epoch" in markdown


@NEEDS_DATA
def test_table2_sets_each_cell_beside_the_authors_101_seeds(heart_run):
    # Arrange / Act
    _, result, _ = heart_run

    # Assert: client x method x (AUROC, balanced accuracy, AUPRC), each with the authors' 101 seeds
    table = result["datasets"]["gl_heart"]["table2"]
    assert {(row["client"], row["method"]) for row in table} == {(c, m) for c in CLIENTS for m in METHODS["gl_heart"]}
    assert {row["metric"] for row in table} == {"auroc", "balanced_accuracy", "auprc"}
    for row in table:
        assert row["ours"]["n"] == 1 and row["authors"]["n"] == 101
        assert row["difference_points"] == pytest.approx(100 * (row["ours"]["mean"] - row["authors"]["mean"]))


@NEEDS_DATA
def test_averaging_is_timed_secure_and_plain_for_both_federated_vectors(heart_run):
    # Arrange / Act
    _, result, _ = heart_run

    # Assert
    timing = result["datasets"]["gl_heart"]["aggregation_round_seconds"]
    assert set(timing) == {"gl (global layers)", "fedavg (whole model)"}
    assert timing["gl (global layers)"]["values"] < timing["fedavg (whole model)"]["values"]
    assert all(t["secure"] > 0 and t["plain"] > 0 for t in timing.values())
    # the vector timed is the one a client sends: the global layers' parameters and batch-norm statistics
    sent = {r["method"]: next(iter(r["metrics"]["clients"].values()))["federated_parameters"]
            for r in result["datasets"]["gl_heart"]["runs"]}
    assert timing["gl (global layers)"]["values"] == sent["gl"] > result["datasets"]["gl_heart"]["parameters"][
        "ours"][next(iter(result["datasets"]["gl_heart"]["parameters"]["ours"]))]["federated_gl"]


@pytest.mark.parametrize("option", ["--markdown", "--json"])
def test_an_output_naming_the_reuse_file_is_a_usage_error_and_the_file_is_kept(tmp_path, capsys, option):
    # Arrange
    reuse = tmp_path / "reuse.json"
    reuse.write_text('{"benchmark": "gl", "datasets": {}}')
    argv = {"--markdown": ["--json", str(tmp_path / "r.json")], "--json": []}[option]
    # Act
    with pytest.raises(SystemExit) as stop:
        main([*argv, option, str(reuse), "--reuse", str(reuse)])
    # Assert
    assert stop.value.code == 2 and f"{option} {reuse} would replace --reuse {reuse}" in capsys.readouterr().err
    assert reuse.read_text() == '{"benchmark": "gl", "datasets": {}}' and not (tmp_path / "r.json").exists()
