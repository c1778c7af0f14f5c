"""HE-VFL: equal to the plaintext split NN, learns, leaks nothing it should not, checks inputs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from baselines.he_vfl import HEVFLConfig, he_vfl_active, he_vfl_passive, project_training, run_he_vfl
from baselines.splitnn import train_splitnn
from protocols.errors import InputError
from protocols.interactive import SETUP_MESSAGES, TRAINING_MESSAGES
from protocols.transport import RunResult, run_parties
from securefl.data import PartyTable, VerticalSplit

from .test_splitnn import TINY, signed_labels, tiny_split

SMALL_KEYS = dict(key_bits=512, insecure_small_keys_for_tests=True)


def _roles(split: VerticalSplit, config: HEVFLConfig, *, record: bool = False,
           backend: str = "inprocess") -> RunResult:
    active, passive = split.dataset.active, split.dataset.passive[0]
    return run_parties(
        {"active": he_vfl_active, "passive": he_vfl_passive}, record=record, backend=backend,
        kwargs={"active": {"passive": "passive", "table": active, "train_ids": split.train_ids,
                           "test_ids": split.test_ids, "config": config, "return_weights": True},
                "passive": {"active": "active", "table": passive, "config": config,
                            "return_weights": True}})


def _weights(run: RunResult) -> dict[str, np.ndarray]:
    """Every layer's weights; the interactive passive half is W = W~ - eps_acc."""
    weights: dict[str, Any] = {**run.results["active"]["weights"], **run.results["passive"]["weights"]}
    weights["interactive.w_passive"] = (weights.pop("interactive.masked_w_passive")
                                        - weights.pop("interactive.noise"))
    return weights


@pytest.mark.parametrize("he", ["paillier", "ckks"])
def test_training_through_the_protocol_equals_plaintext_training(he: str) -> None:
    # Arrange: the passive party's initial interactive weights from a seed both runs are given
    split = tiny_split(rows=50)
    config = HEVFLConfig(he=he, epochs=2, batch_size=8, lr=0.01, interactive_lr=0.5, passive_seed=11, share_seed=12,
                         **TINY,
                         **SMALL_KEYS)

    run = _roles(split, config)
    reference = train_splitnn(split, config.plain())
    weights = _weights(run)

    assert set(weights) == set(reference["weights"])
    for name, expected in reference["weights"].items():
        assert np.allclose(weights[name], expected, atol=1e-6, rtol=0), name
    assert run.results["active"]["metrics"] == reference["metrics"]
    steps = config.total_steps(run.results["active"]["train_rows"])
    assert run.results["active"]["steps"] == run.results["passive"]["steps"] == steps >= 4
    assert np.abs(run.results["passive"]["weights"]["interactive.noise"]).max() > 0.01


def test_he_vfl_learns_on_separable_data() -> None:
    config = HEVFLConfig(he="ckks", epochs=25, batch_size=16, lr=0.03, interactive_lr=0.5, **TINY)

    result = run_he_vfl(tiny_split(rows=120), config)

    assert result["metrics"]["accuracy"] >= 0.8
    assert result["method"] == "he-vfl" and result["bytes"] > 0
    assert set(result["phases"]) >= {"psi", "training", "inference"}
    assert set(result["bytes_per_party"]) == {"active", "passive"}
    assert sum(result["bytes_per_party"].values()) == result["bytes"]


def test_the_passive_party_never_receives_labels_or_predictions() -> None:
    split = tiny_split(rows=40)
    run = _roles(split, HEVFLConfig(he="ckks", epochs=1, batch_size=8, **TINY), record=True)

    for message in run.logs["passive"]:
        for name, value in message.fields.items():
            public = (message.tag.name, name) == ("ready", "init_bound")  # 1/sqrt(fan_in), from the widths
            assert public or not isinstance(value, float), (message.tag, name)
            if isinstance(value, np.ndarray):
                assert value.dtype.kind in "iu", (message.tag, name, value.dtype)
    batch_fields = {tuple(sorted(m.fields)) for m in run.logs["passive"] if m.tag.stage == "he_vfl"}
    assert batch_fields == {("kind", "rows")}


def test_the_observer_sees_the_gradients_the_passive_party_decrypts_which_leak_the_labels() -> None:
    # Arrange
    from securefl.runtime.leakage import label_leakage

    split = tiny_split(rows=60)
    active, passive = split.dataset.active, split.dataset.passive[0]
    # the paper's widths (TINY's ReLUs scatter dL/da); passive_seed, share_seed: the initial weights repeat, so
    # the steps attacked are the same every run
    config = HEVFLConfig(he="ckks", epochs=2, batch_size=12, passive_seed=0, share_seed=0)
    seen: list[tuple[int, np.ndarray, np.ndarray]] = []
    # Act
    run = run_parties({"active": he_vfl_active, "passive": he_vfl_passive},
                      kwargs={"active": {"passive": "passive", "table": active, "train_ids": split.train_ids,
                                         "test_ids": split.test_ids, "config": config},
                              "passive": {"active": "active", "table": passive, "config": config,
                                          "observe": lambda step, rows, grad: seen.append((step, rows, grad))}})
    # Assert: one call per training step, each epoch's rows the training rows once, a gradient per row
    assert len(seen) == run.results["passive"]["steps"] == run.results["active"]["steps"]
    per_epoch = len(seen) // 2
    first_epoch = [passive.ids[r] for _, rows, _ in seen[:per_epoch] for r in rows]
    assert sorted(first_epoch) == sorted(set(split.train_ids) & set(passive.ids))
    assert all(grad.shape == (len(rows), config.passive_width(passive.n_features)) for _, rows, grad in seen)
    labels = dict(zip(active.ids, active.labels))
    leaks = [label_leakage(grad, np.array([labels[passive.ids[r]] for r in rows])) for _, rows, grad in seen]
    aurocs = [leak["cosine_auroc"] for leak in leaks]  # the decrypted dL/da gives the labels away
    assert np.median(aurocs) > 0.9 and min(aurocs) > 0.5


def test_max_steps_and_progress() -> None:
    seen: list[tuple[int, int]] = []
    config = HEVFLConfig(he="paillier", epochs=3, batch_size=8, max_steps=3, **TINY, **SMALL_KEYS,
                         progress=lambda done, total: seen.append((done, total)))

    result = run_he_vfl(tiny_split(rows=40), config)

    per_epoch = -(-result["train_rows"] // 8)
    assert (result["steps"], result["total_steps"], result["epochs"]) == (3, 3 * per_epoch, 3 // per_epoch)
    assert seen == [(e, 3) for e in range(1, 3 // per_epoch + 1)]
    first, rest = result["first_step_s"], result["phases"]["training"] - result["first_step_s"]
    assert 0 < first < result["phases"]["training"]
    assert result["projected_training_s"] == pytest.approx(first + rest / 2 * (3 * per_epoch - 1))
    assert "progress" not in result["settings"]


@pytest.mark.multiprocess
def test_roles_run_in_separate_processes() -> None:
    split = tiny_split(rows=40)
    config = HEVFLConfig(he="paillier", epochs=1, batch_size=8, passive_seed=3, share_seed=4, **TINY, **SMALL_KEYS)
    ticks: list[tuple[int, int]] = []

    result = run_he_vfl(split, replace(config, progress=lambda done, total: ticks.append((done, total))),
                        backend="torch")
    inprocess = run_he_vfl(split, config)

    assert result["metrics"] == inprocess["metrics"]
    assert ticks == [(1, 1)]  # the active party's progress, relayed from its process


@pytest.mark.parametrize("kwargs", [dict(he="rsa"), dict(he="paillier", key_bits=512),
                                    dict(noise_scale=-1.0), dict(mask_bits=0), dict(max_steps=0),
                                    dict(activation_bound=0.0), dict(epochs=0),
                                    dict(batch_size=256, activation_bound=512.0)])
def test_bad_config(kwargs: dict) -> None:
    with pytest.raises(InputError):
        HEVFLConfig(**kwargs)


def test_an_observer_needs_the_in_process_backend() -> None:
    with pytest.raises(InputError, match="observe= needs backend='inprocess'"):
        run_he_vfl(tiny_split(), HEVFLConfig(epochs=1), backend="torch", observe=lambda *view: None)


def test_more_than_one_passive_party_is_refused() -> None:
    with pytest.raises(InputError, match="exactly one passive party"):
        run_he_vfl(tiny_split(passives=2), HEVFLConfig(epochs=1))
    split = tiny_split()
    with pytest.raises(InputError, match="exactly one passive party"):
        run_parties({"active": he_vfl_active, "passive": he_vfl_passive}, timeout=20,
                    kwargs={"active": {"passive": ["passive", "other"], "table": split.dataset.active,
                                       "train_ids": split.train_ids, "test_ids": split.test_ids,
                                       "config": HEVFLConfig(epochs=1)},
                            "passive": {"active": "active", "table": split.dataset.passive[0],
                                        "config": HEVFLConfig(epochs=1)}})


def test_bad_inputs_to_the_roles() -> None:
    split = tiny_split()
    unlabeled = PartyTable("active", split.dataset.active.ids, split.dataset.active.features,
                           split.dataset.active.feature_names)
    roles = {"active": he_vfl_active, "passive": he_vfl_passive}
    base = {"passive": "passive", "train_ids": split.train_ids, "test_ids": split.test_ids,
            "config": HEVFLConfig(epochs=1)}
    passive = {"active": "active", "table": split.dataset.passive[0], "config": HEVFLConfig(epochs=1)}

    with pytest.raises(InputError, match="no labels"):
        run_parties(roles, timeout=20, kwargs={"active": {**base, "table": unlabeled}, "passive": passive})
    with pytest.raises(InputError, match="must be non-empty"):
        run_parties(roles, timeout=20, kwargs={"active": {**base, "table": split.dataset.active,
                                                          "test_ids": frozenset({"nobody"})},
                                               "passive": passive})
    with pytest.raises(InputError, match="HEVFLConfig"):
        run_parties(roles, timeout=20, kwargs={"active": {**base, "table": split.dataset.active,
                                                          "config": object()}, "passive": passive})
    with pytest.raises(InputError, match="backend"):
        run_he_vfl(split, HEVFLConfig(epochs=1), backend="carrier-pigeon")
    with pytest.raises(InputError, match="needs labels 0/1"):
        run_he_vfl(signed_labels(split), HEVFLConfig(epochs=1))


def test_timing_runs_can_score_a_few_test_batches_and_project_the_rest():
    # Arrange: 1 training step and 1 test batch of 4 rows
    config = HEVFLConfig(he="paillier", epochs=1, batch_size=4, max_steps=1, max_eval_batches=1, **TINY,
                         **SMALL_KEYS)
    # Act
    result = run_he_vfl(tiny_split(rows=60), config)
    # Assert
    assert result["scored_rows"] == 4 < result["test_rows"]
    assert result["projected_inference_s"] == pytest.approx(
        result["phases"]["inference"] * result["test_rows"] / 4)
    # every message kind is one that the byte projection knows: once, per step or per batch
    names = {key.partition("/")[2] for tags in result["bytes_per_tag"].values() for key in tags}
    assert names <= {*SETUP_MESSAGES, *TRAINING_MESSAGES, "x", "z_masked", "z_reply", "batch", "singles",
                     "doubles", "rows"}
    assert {party: sum(t["bytes"] for t in tags.values())
            for party, tags in result["bytes_per_tag"].items()} == result["bytes_per_party"]


def test_the_first_step_counts_once_in_a_projection() -> None:
    assert project_training(10.0, 4.0, 4, 100) == pytest.approx(4.0 + 2.0 * 99)
    assert project_training(10.0, 0.0, 4, 100) == pytest.approx(250.0)  # no first step recorded
    assert project_training(3.0, 3.0, 1, 100) == pytest.approx(300.0)  # one step: nothing to separate
