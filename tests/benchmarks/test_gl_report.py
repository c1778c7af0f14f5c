"""GL report: summaries, the authors' file format, Table 2 rows and the best-method check."""

import math

import pytest

from benchmarks.gl_report import _cell, best_method_check, collect, load_reference, summary, table2


def _result(method, seed_values):
    return {"method": method, "metrics": {"clients": {
        "cleveland": {"auroc": seed_values[0], "balanced_accuracy": 0.7, "auprc": 0.6, "evaluated_on": "test"}}}}


def test_summary_gives_mean_std_and_t_interval():
    # Arrange / Act
    s = summary([0.8, 0.9, 1.0])
    # Assert: std 0.1, t(0.975, 2) = 4.303
    assert s["n"] == 3 and s["mean"] == pytest.approx(0.9) and s["std"] == pytest.approx(0.1)
    assert s["ci95"] == pytest.approx(4.3027 * 0.1 / math.sqrt(3), rel=1e-4)


def test_summary_ignores_nan_and_handles_one_value():
    s = summary([0.5, float("nan")])
    assert s["n"] == 1 and s["mean"] == 0.5 and math.isnan(s["ci95"])


def test_one_value_has_no_std_and_its_cell_shows_no_spread():
    # Arrange: one seed of ours against two of the authors'
    ours = collect([_result("gl", [0.7581])])
    reference = {"gl": {"cleveland": {"auroc": [0.8, 0.9]}}}
    # Act
    s = summary([0.7581])
    markdown, _ = table2("gl_heart", ours, reference)
    # Assert: undefined (null in JSON), not 0.0; the cell reads "75.81 (n=1)", not "75.81 ± 0.00 (n=1)"
    assert math.isnan(s["std"]) and math.isnan(s["ci95"])
    assert "| 75.81 (n=1) |" in markdown and "± 0.00" not in markdown


def test_a_stored_summary_with_std_zero_for_one_value_renders_as_a_new_one():
    # Arrange: files written before the fix stored std 0.0 for n = 1
    old = {"n": 1, "mean": 0.7581, "std": 0.0, "ci95": float("nan")}
    new = {**old, "std": float("nan")}
    # Act / Assert: n decides, not the stored std
    assert _cell(old) == _cell(new) == "75.81 (n=1)"


def test_reference_rows_are_read_per_client_and_metric(tmp_path):
    # Arrange: the authors' layout, rows client.metric, one column per seed
    path = tmp_path / "heart/in-paper/personalizedfederated_test_metrics.csv"
    path.parent.mkdir(parents=True)
    path.write_text("index,0,1\nseed,0.0,1.0\ncleveland.auroc,0.8,0.9\n")
    # Act
    ref = load_reference(tmp_path, "gl_heart")
    # Assert
    assert ref == {"gl": {"cleveland": {"auroc": [0.8, 0.9]}}}


def test_table2_compares_ours_with_the_authors_and_picks_the_best_method():
    # Arrange
    ours = collect([_result("gl", [0.9]), _result("gl", [0.8]), _result("local", [0.7])])
    reference = {"gl": {"cleveland": {"auroc": [0.86, 0.88]}}, "local": {"cleveland": {"auroc": [0.8]}}}
    # Act
    markdown, records = table2("gl_heart", ours, reference)
    best = best_method_check(records)
    # Assert: GL 85.00 vs 87.00 -> -2.00 points; GL best on both sides
    gl_auroc = next(r for r in records if r["method"] == "gl" and r["metric"] == "auroc")
    assert gl_auroc["difference_points"] == pytest.approx(-2.0)
    assert "balanced accuracy ours" in markdown and "-2.00" in markdown
    assert best == [{"client": "cleveland", "metric": "auroc", "ours": "gl", "authors": "gl"}]


def test_covertype_accuracy_is_our_balanced_accuracy_against_the_authors_macro_accuracy_row():
    # Arrange: plain and balanced accuracy differ; the authors' "accuracy" row is macro-averaged
    run = {"method": "gl", "metrics": {"clients": {"poudre": {
        "auroc": 0.9, "accuracy": 0.80, "balanced_accuracy": 0.74, "auprc": 0.7}}}}
    reference = {"gl": {"poudre": {"auroc": [0.89], "accuracy": [0.742], "recall": [0.81], "auprc": [0.72]}}}
    # Act
    markdown, records = table2("gl_covertype", collect([run]), reference)
    # Assert: 74.0 vs 74.2 -> -0.20 points, and the column says which accuracy it is
    acc = next(r for r in records if r["metric"] == "balanced_accuracy")
    assert acc["authors_metric"] == "accuracy" and acc["difference_points"] == pytest.approx(-0.2)
    assert "accuracy (macro) ours" in markdown
    assert not any(r["metric"] == "accuracy" for r in records)


def _fedavg_run(seed, per_class):
    return {"method": "fedavg", "seed": seed, "metrics": {"clients": {"neota": {"auroc": 0.9, "per_class": per_class}}}}


PER_CLASS = [{"class": 0, "support": 5, "auroc": 0.9, "auprc": 0.8, "recall": 0.7},
             {"class": 1, "support": 0, "auroc": None, "auprc": None, "recall": None},
             {"class": 2, "support": 3, "auroc": 0.7, "auprc": 0.4, "recall": 0.5},
             {"class": 3, "support": 0, "auroc": None, "auprc": None, "recall": None}]


def test_global_class_macro_scores_missing_classes_at_chance_auroc_and_zero_auprc():
    from benchmarks.gl_report import global_class_macro

    assert global_class_macro(PER_CLASS, "auroc") == pytest.approx((0.9 + 0.5 + 0.7 + 0.5) / 4)
    assert global_class_macro(PER_CLASS, "auprc") == pytest.approx((0.8 + 0.0 + 0.4 + 0.0) / 4)


def test_global_class_table_compares_fedavg_with_the_authors_and_is_empty_without_per_class():
    from benchmarks.gl_report import global_class_table

    # Arrange
    runs = [_fedavg_run(8, PER_CLASS), _fedavg_run(9, PER_CLASS), {"method": "gl", "seed": 8, "metrics": {
        "clients": {"neota": {"auroc": 0.9, "per_class": PER_CLASS}}}}]
    reference = {"fedavg": {"neota": {"auroc": [0.60, 0.60], "auprc": [0.25, 0.35]}}}
    # Act
    table = global_class_table(runs, reference)
    # Assert: AUROC 65.00 vs 60.00 (+5.00), AUPRC 30.00 vs 30.00; GL runs are not in it
    assert "| neota | 65.00 ± 0.00 [±0.00] (n=2) | 60.00 ± 0.00 [±0.00] (n=2) | +5.00 |" in table
    assert "| +0.00 |" in table and table.count("| neota |") == 1
    assert global_class_table([_fedavg_run(8, None)], reference) == ""
