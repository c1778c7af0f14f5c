"""The shared training loop and its config."""

from __future__ import annotations

import pytest
import torch

from protocols.errors import InputError
from securefl.algorithms.training import TrainConfig, fit, fit_classifier, predict_scores
from securefl.models import mlp
from securefl.runtime import SeedPlan


def _data(n: int = 200) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(n, 4, generator=SeedPlan(0).torch("x"))
    return x, (x[:, 0] - x[:, 2] > 0).float()


def test_classifier_learns_and_reports_progress_per_epoch():
    x, y = _data()
    seen = []
    model = mlp(4, 20, generator=SeedPlan(0).torch("init"))

    history = fit_classifier(model, x, y, config=TrainConfig(epochs=30, batch_size=32),
                             generator=SeedPlan(0).torch("b"), progress=lambda e, t: seen.append(e))

    accuracy = float(((torch.as_tensor(predict_scores(model, x)) >= 0.5).float() == y).float().mean())
    assert accuracy > 0.9 and history[-1] < history[0]
    assert seen == list(range(1, 31))


def test_training_on_zero_rows_is_an_input_error():
    model = mlp(4, 8)
    with pytest.raises(InputError, match="zero rows"):
        fit(model, lambda xb: model(xb).sum(), (torch.zeros(0, 4),), epochs=1, batch_size=4, lr=1e-3,
            generator=torch.Generator())


def test_config_defaults_are_the_papers_and_settings_are_json_ready():
    config = TrainConfig(progress=print)

    assert (config.epochs, config.batch_size, config.lr, config.hidden_multiplier) == (100, 128, 1e-3, 5)
    assert "progress" not in config.settings() and config.settings()["device"] == "cpu"



@pytest.mark.parametrize("device, asked, used", [("cpu", True, False), ("cuda", True, True),
                                                 ("cuda:1", True, True), ("cuda", False, False)])
def test_cuda_graphs_are_on_by_default_and_settings_say_whether_they_were_used(device, asked, used):
    # Arrange
    default = TrainConfig()
    # Act
    settings = TrainConfig(device=device, cuda_graphs=asked).settings()
    # Assert
    assert default.cuda_graphs is True
    assert settings["cuda_graphs"] is used

@pytest.mark.parametrize("field,value", [("epochs", 0), ("batch_size", None), ("lr", -1.0), ("device", 3),
                                         ("cuda_graphs", "yes")])
def test_bad_values_name_the_field(field, value):
    with pytest.raises(InputError, match=f"TrainConfig.{field}"):
        TrainConfig(**{field: value})


def test_vae_noise_drawn_by_the_loop_is_what_the_vae_would_draw_itself():
    # Arrange: two identical VAEs and generators; one draws its own noise, one gets it from fit
    from securefl.models.vae import VAE

    x = torch.randn(50, 6, generator=SeedPlan(0).torch("x"))
    own, given = (VAE(6, generator=SeedPlan(0).torch("init")) for _ in range(2))
    gen_own, gen_given = SeedPlan(0).torch("b"), SeedPlan(0).torch("b")
    # Act
    a = fit(own, lambda xb: own.loss(xb, gen_own), (x,), epochs=3, batch_size=16, lr=1e-2, generator=gen_own)
    b = fit(given, lambda xb, noise: given.loss(xb, noise=noise), (x,), epochs=3, batch_size=16, lr=1e-2,
            generator=gen_given, noise_width=given.latent)
    # Assert: the same losses and weights, bit for bit
    assert a == b
    assert all(torch.equal(p, q) for p, q in zip(own.parameters(), given.parameters()))


def test_cuda_graphs_change_nothing_off_a_gpu():
    x, y = _data()
    runs = []
    for graphs in (False, True):
        model = mlp(4, 20, generator=SeedPlan(0).torch("init"))
        runs.append(fit_classifier(model, x, y, config=TrainConfig(epochs=3, batch_size=32, cuda_graphs=graphs),
                                   generator=SeedPlan(0).torch("b")))
    assert runs[0] == runs[1]


def test_fit_matches_a_plain_reference_loop_bit_for_bit():
    # Arrange: the textbook loop (per-tensor Adam, index batches from one permutation an epoch)
    import torch.nn.functional as F

    x, y = _data(150)
    reference, ours = (mlp(4, 20, generator=SeedPlan(0).torch("init")) for _ in range(2))
    gen = SeedPlan(0).torch("b")
    adam = torch.optim.Adam(reference.parameters(), lr=1e-2, foreach=False)
    for _ in range(3):
        for rows in torch.randperm(150, generator=gen).split(32):
            loss = F.binary_cross_entropy_with_logits(reference(x[rows]).squeeze(1), y[rows])
            adam.zero_grad()
            loss.backward()
            adam.step()
    # Act
    fit_classifier(ours, x, y, config=TrainConfig(epochs=3, batch_size=32, lr=1e-2), generator=SeedPlan(0).torch("b"))
    # Assert
    assert all(torch.equal(p, q) for p, q in zip(reference.parameters(), ours.parameters()))
