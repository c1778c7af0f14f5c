"""STFL: learning, what each party sees on the wire, several passive parties, bad input."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from protocols.errors import InputError
from protocols.transport import run_parties
from securefl.algorithms import STFLConfig, run_stfl, stfl_parties
from securefl.data import PartyTable, VerticalDataset, stfl_split
from tests.securefl.algorithms.helpers import majority_rate, synthetic

FAST = STFLConfig(epochs=40, vae_epochs=20, batch_size=32, seed=3, latent_seed=3)  # repeatable draws


def held_out_labels(split) -> np.ndarray:
    active = split.dataset.active
    return np.array([y for i, y in zip(active.ids, active.labels) if i in split.test_ids])


def test_stfl_learns_well_above_the_majority_rate():
    split = stfl_split(synthetic(), seed=1)

    result = run_stfl(split, FAST)

    assert result["metrics"]["accuracy"] > majority_rate(held_out_labels(split)) + 0.15
    assert result["metrics"]["auroc"] > 0.85
    assert result["method"] == "stfl" and result["dataset"] == "synthetic"
    assert result["seed"] == 3 and result["device"] == "cpu"
    assert set(result["phases"]) >= {"psi", "vae_pretraining", "training", "inference"}
    assert result["bytes"] == sum(result["bytes_per_party"].values()) > 0
    assert result["settings"]["epochs"] == 40 and result["settings"]["vae_epochs"] == 20


def test_passive_party_pretrains_on_rows_outside_the_intersection_with_paper_widths():
    split = stfl_split(synthetic(passive_features=(7,)), seed=0)

    result = run_stfl(split, FAST)

    passive, active = result["parties"]["passive1"], result["parties"]["active"]
    assert passive["self_taught_rows"] == len(split.self_taught_ids) == 120
    assert passive["intersection"] == active["intersection"] == 180
    assert (passive["hidden"], passive["latent"]) == (35, 3)  # 5 x 7 and 7 // 2
    assert passive["vae_loss"][-1] < passive["vae_loss"][0]
    assert active["input_features"] == 3 + 3 and active["hidden"] == 30
    assert active["train_rows"] + active["test_rows"] == 180


def test_sampled_latents_learn_too_and_differ_from_the_means():
    # Arrange
    split = stfl_split(synthetic(), seed=1)
    # Act
    means = run_stfl(split, replace(FAST, latent="mean"))
    draws = run_stfl(split, replace(FAST, latent="sample"))
    # Assert: the same VAE (same seed), other inputs to the classifier, still well above chance
    assert draws["parties"]["passive1"]["vae_loss"] == pytest.approx(means["parties"]["passive1"]["vae_loss"])
    assert draws["parties"]["passive1"]["latent_reading"] == "sample"
    assert means["parties"]["passive1"]["latent_reading"] == "mean"
    assert draws["parties"]["active"]["loss"] != pytest.approx(means["parties"]["active"]["loss"])
    assert draws["metrics"]["accuracy"] > majority_rate(held_out_labels(split)) + 0.15
    assert draws["settings"]["latent"] == "sample"
    assert draws["settings"]["shared_latent"] == "one posterior draw per row"


def _latents_of_two_runs(config: STFLConfig) -> list[dict[str, dict[str, list[float]]]]:
    """What the active party received from each passive party, by row ID, in two runs of ``config``."""
    split = stfl_split(synthetic(n=120), seed=0)
    seen = []
    for _ in range(2):
        got = {}
        run_stfl(split, config, observe=lambda name, ids, z: got.update({name: dict(zip(ids, z.tolist()))}))
        seen.append(got)
    return seen


def test_a_rows_draw_does_not_depend_on_psis_order_so_a_latent_seed_repeats_the_run():
    # Arrange: PSI's order of the common rows is new in every run
    config = STFLConfig(epochs=2, vae_epochs=3, batch_size=32, seed=4, latent="sample", latent_seed=9)
    # Act
    seen = _latents_of_two_runs(config)
    # Assert: every row got the same draw both times
    assert seen[0] == seen[1] and len(seen[0]["passive1"]) == 120 - len(stfl_split(synthetic(n=120), seed=0)
                                                                         .self_taught_ids)


def test_without_a_latent_seed_the_draws_come_from_the_os_not_from_the_run_seed():
    # Arrange: the same run seed twice, which the active party may know
    config = STFLConfig(epochs=2, vae_epochs=3, batch_size=32, seed=4)
    # Act
    seen = _latents_of_two_runs(config)
    # Assert: no row got the same draw twice
    first, second = seen[0]["passive1"], seen[1]["passive1"]
    assert config.latent == "sample" and all(first[row] != second[row] for row in first)


@pytest.mark.parametrize("value", [0, -1.0, float("inf"), float("nan"), True, "60"])
def test_a_timeout_a_transport_cannot_wait_is_refused(value):
    with pytest.raises(InputError, match="STFLConfig.timeout must be a positive finite number"):
        STFLConfig(timeout=value)


@pytest.mark.parametrize("value", [-1, 2**63, 1.5, True])
def test_a_bad_latent_seed_names_the_field(value):
    with pytest.raises(InputError, match="STFLConfig.latent_seed"):
        STFLConfig(latent_seed=value)


def test_observe_needs_the_in_process_backend():
    split = stfl_split(synthetic(n=60), seed=0)
    with pytest.raises(InputError, match="observe needs backend='inprocess'"):
        run_stfl(split, STFLConfig(epochs=1, vae_epochs=1), backend="torch", observe=lambda *a: None)


def test_hidden_widths_follow_the_configured_multiplier():
    split = stfl_split(synthetic(n=100, passive_features=(6,)), seed=0)

    result = run_stfl(split, STFLConfig(epochs=1, vae_epochs=1, hidden_multiplier=2))

    assert result["parties"]["passive1"]["hidden"] == 12 and result["parties"]["passive1"]["latent"] == 3
    assert result["parties"]["active"]["hidden"] == 2 * (3 + 3)


def test_same_seeds_give_the_same_result_and_other_seeds_another():
    split = stfl_split(synthetic(n=120), seed=0)
    config = STFLConfig(epochs=5, vae_epochs=5, batch_size=32, seed=11, latent_seed=11)

    first, second = run_stfl(split, config), run_stfl(split, config)
    other = run_stfl(split, STFLConfig(epochs=5, vae_epochs=5, batch_size=32, seed=12, latent_seed=12))

    # equal up to float32 rounding: CPU kernels may sum in another order for another alignment
    vae_first, vae_second = (r["parties"]["passive1"]["vae_loss"] for r in (first, second))
    assert vae_first == pytest.approx(vae_second)
    assert first["parties"]["active"]["loss"] == pytest.approx(second["parties"]["active"]["loss"], rel=1e-5)
    assert first["metrics"] == pytest.approx(second["metrics"])
    assert other["parties"]["active"]["loss"] != pytest.approx(first["parties"]["active"]["loss"], rel=1e-5)


def test_two_passive_parties_each_send_their_own_latents():
    split = stfl_split(synthetic(passive_features=(4, 5)), seed=2)

    result = run_stfl(split, FAST)

    active = result["parties"]["active"]
    assert active["latent_widths"] == {"passive1": 2, "passive2": 2}
    assert active["input_features"] == 3 + 2 + 2
    assert result["metrics"]["accuracy"] > majority_rate(held_out_labels(split)) + 0.15
    assert set(result["bytes_per_party"]) == {"active", "passive1", "passive2"}


def test_progress_callback_sees_every_training_epoch():
    seen: list[tuple[int, int]] = []
    config = STFLConfig(epochs=4, vae_epochs=2, seed=0, progress=lambda e, t: seen.append((e, t)))

    run_stfl(stfl_split(synthetic(n=100), seed=0), config)

    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


# --- what travels: read from the transport's delivery log --------------------------------


def _recorded_run(split, config):
    roles, kwargs = stfl_parties(split, config)
    return run_parties(roles, kwargs=kwargs, record=True)


def test_passive_parties_receive_only_psi_and_the_channel_handshake():
    split = stfl_split(synthetic(passive_features=(4, 6)), seed=0)
    run = _recorded_run(split, FAST)
    n_active = split.dataset.active.n_rows

    for name in ("passive1", "passive2"):
        log = run.logs[name]
        kinds = sorted((m.tag.stage, m.tag.name, tuple(sorted(m.fields))) for m in log)
        assert kinds == [("channel", "hello", ("eph", "static")),
                         ("psi", "rows", ("rows",)), ("psi", "singles", ("points",))]
        assert all(m.src == "active" for m in log)
        by_name = {m.tag.name: m for m in log}
        assert by_name["singles"]["points"].dtype == np.uint8
        assert by_name["singles"]["points"].shape == (n_active, 32)  # blinded IDs, one per active row
        assert by_name["rows"]["rows"].dtype.kind == "i"
        assert len(by_name["rows"]["rows"]) == run.results[name]["intersection"]
        assert len(by_name["hello"]["eph"]) == 32 and by_name["hello"]["static"] == b""
        # no float array (labels, gradients, outputs) ever reaches a passive party
        assert not any(isinstance(v, np.ndarray) and v.dtype.kind == "f"
                       for m in log for v in m.fields.values())


def test_latents_reach_the_active_party_only_as_ciphertext_and_without_the_decoder():
    split = stfl_split(synthetic(passive_features=(8,)), seed=0)
    run = _recorded_run(split, FAST)
    passive = run.results["passive1"]

    stfl_msgs = [m for m in run.logs["active"] if m.tag.stage == "stfl"]
    assert [(m.src, m.tag.name, sorted(m.fields)) for m in stfl_msgs] == [("passive1", "latents", ["ct"])]
    ct = stfl_msgs[0]["ct"]
    latent_bytes = passive["intersection"] * passive["latent"] * 4
    assert isinstance(ct, bytes) and latent_bytes < len(ct) < latent_bytes + 512  # latents only, no weights
    assert {m.tag.stage for m in run.logs["active"]} == {"psi", "channel", "stfl"}
    assert not any(isinstance(v, np.ndarray) and v.dtype.kind == "f"
                   for m in run.logs["active"] for v in m.fields.values())


# --- bad input ------------------------------------------------------------------------------


def test_passive_party_without_overlapping_rows_is_a_clear_error():
    data = synthetic(n=100, passive_features=(4, 4))
    other = data.passive[1]
    stranger = PartyTable(name=other.name, ids=tuple(f"x{i}" for i in other.ids), features=other.features,
                          feature_names=other.feature_names)  # IDs the active party does not hold
    dataset = VerticalDataset(name="d", active=data.active, passive=(data.passive[0], stranger))

    with pytest.raises(InputError, match="in common"):
        run_stfl(stfl_split(dataset, seed=0), STFLConfig(epochs=1, vae_epochs=1))


def test_no_common_ids_at_all_is_a_clear_error():
    data = synthetic(n=100)
    p = data.passive[0]
    stranger = PartyTable(name=p.name, ids=tuple(f"x{i}" for i in p.ids), features=p.features,
                          feature_names=p.feature_names)

    with pytest.raises(InputError, match="in common"):
        run_stfl(stfl_split(VerticalDataset(name="d", active=data.active, passive=(stranger,)), seed=0),
                 STFLConfig(epochs=1, vae_epochs=1))


def test_a_passive_party_holding_only_self_taught_ids_is_told_apart_from_no_overlap():
    data = synthetic(n=100)
    self_taught = stfl_split(data, seed=0).self_taught_ids
    p = data.passive[0]
    keep = [i for i, v in enumerate(p.ids) if v in self_taught]
    only_self_taught = PartyTable(name=p.name, ids=tuple(p.ids[i] for i in keep), features=p.features[keep],
                                  feature_names=p.feature_names)
    dataset = VerticalDataset(name="d", active=data.active, passive=(only_self_taught,))

    with pytest.raises(InputError, match="no training or test IDs in common .* self-taught rows"):
        run_stfl(stfl_split(dataset, seed=0), STFLConfig(epochs=1, vae_epochs=1))


def test_no_self_taught_rows_is_a_clear_error():
    split = stfl_split(synthetic(n=100), seed=0, all_data=True)

    with pytest.raises(InputError, match="self-taught"):
        run_stfl(split, STFLConfig(epochs=1, vae_epochs=1))


@pytest.mark.parametrize("field,value", [
    ("epochs", 0), ("vae_epochs", 0), ("batch_size", -1), ("hidden_multiplier", True), ("lr", 0.0),
    ("lr", float("nan")), ("seed", -1), ("device", "tpu"), ("progress", 5), ("timeout", 0),
    ("epochs", 2.5), ("latent", "median"),
])
def test_bad_config_values_name_the_field(field, value):
    with pytest.raises(InputError, match=f"STFLConfig.{field}"):
        STFLConfig(**{field: value})


def test_config_is_keyword_only_and_frozen():
    with pytest.raises(TypeError):
        STFLConfig(10)  # type: ignore[misc]
    with pytest.raises(AttributeError):
        FAST.epochs = 3  # type: ignore[misc]


def test_run_stfl_needs_an_stfl_config():
    from securefl.algorithms import TrainConfig

    with pytest.raises(InputError, match="STFLConfig"):
        run_stfl(stfl_split(synthetic(n=100), seed=0), TrainConfig())  # type: ignore[arg-type]


@pytest.mark.multiprocess
def test_runs_unchanged_on_the_torch_backend_with_two_passive_parties():
    split = stfl_split(synthetic(n=120, passive_features=(4, 4)), seed=0)
    config = STFLConfig(epochs=3, vae_epochs=3, batch_size=32, seed=5, latent_seed=5)
    ticks: list[tuple[int, int]] = []

    remote = run_stfl(split, replace(config, progress=lambda done, total: ticks.append((done, total))),
                      backend="torch")
    local = run_stfl(split, config)

    assert remote["settings"]["backend"] == "torch"
    assert ticks == [(1, 3), (2, 3), (3, 3)]  # the active party's epochs, relayed from its process
    assert remote["parties"]["active"]["loss"] == pytest.approx(local["parties"]["active"]["loss"], rel=1e-5)
    assert remote["bytes_per_party"]["passive1"] > 0 and remote["bytes_per_party"]["passive2"] > 0


def test_per_party_gpu_peaks_of_a_run_reach_the_result(monkeypatch):
    # Arrange: the run reports what torch-backend party processes on a GPU would
    import securefl.algorithms.stfl as stfl_module

    def with_peaks(*args, **kwargs):
        run = run_parties(*args, **kwargs)
        run.gpu_peak_mib = {"active": 5.0, "passive1": 2.5}
        return run

    monkeypatch.setattr(stfl_module, "run_parties", with_peaks)
    split = stfl_split(synthetic(n=120), seed=0)
    # Act
    result = run_stfl(split, STFLConfig(epochs=1, vae_epochs=1, batch_size=32))
    # Assert
    assert result["gpu_peak_mib"] == 5.0
    assert result["gpu_peak_mib_per_party"] == {"active": 5.0, "passive1": 2.5}
