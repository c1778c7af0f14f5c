"""Model builders: the paper's widths, seeded initialisation, the VAE's loss and frozen encoder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from protocols.errors import InputError
from securefl.models import VAE, HierarchicalMLP, Standardizer, hidden_width, latent_width, mlp
from securefl.runtime import SeedPlan


def _weights(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def test_widths_follow_the_paper():
    assert hidden_width(20, 5) == 100
    assert [latent_width(n) for n in (1, 2, 3, 20, 21)] == [1, 1, 1, 10, 10]


def test_mlp_has_one_relu_hidden_layer_and_one_logit():
    net = mlp(6, 30)

    assert [type(m).__name__ for m in net] == ["Linear", "ReLU", "Linear"]
    assert (net[0].in_features, net[0].out_features, net[2].out_features) == (6, 30, 1)
    assert net(torch.zeros(4, 6)).shape == (4, 1)


def test_same_generator_seed_gives_same_weights_and_no_global_rng_is_used():
    plan = SeedPlan(4)
    torch.manual_seed(0)
    a = _weights(mlp(5, 25, generator=plan.torch("init")))
    torch.manual_seed(1)  # the global RNG must not matter
    b = _weights(mlp(5, 25, generator=plan.torch("init")))
    c = _weights(mlp(5, 25, generator=plan.torch("other")))

    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, c))


@pytest.mark.parametrize("bad", [0, -3, True, 2.0])
def test_mlp_rejects_bad_widths(bad):
    with pytest.raises(InputError, match="hidden"):
        mlp(3, bad)


@pytest.mark.parametrize("n,latent", [(1, 1), (7, 3), (20, 10)])
def test_vae_widths_follow_the_config(n, latent):
    vae = VAE(n, multiplier=5)

    assert (vae.hidden, vae.latent) == (5 * n, latent)
    assert vae.body[0].out_features == 5 * n and vae.mu.out_features == latent
    assert vae.decoder[-1].out_features == n


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n_inputs": 0}, "n_inputs must be a positive int, got 0"),
    ({"n_inputs": 3, "latent": 0}, "latent must be a positive int, got 0"),
    ({"n_inputs": 3, "multiplier": 0}, "multiplier must be a positive int, got 0"),
    ({"n_inputs": 3, "latent": 1.5}, "latent must be a positive int, got 1.5"),
])
def test_vae_rejects_bad_widths_naming_them(kwargs, message):
    n_inputs = kwargs.pop("n_inputs")
    with pytest.raises(InputError, match=f"^{message}$"):
        VAE(n_inputs, **kwargs)


def test_vae_encoder_is_the_frozen_mean_path_without_decoder():
    vae = VAE(8, generator=SeedPlan(0).torch("vae"))
    x = torch.randn(10, 8, generator=SeedPlan(0).torch("x"))

    enc = vae.encoder()

    assert not any(p.requires_grad for p in enc.parameters())
    n_params = sum(p.numel() for p in enc.parameters())
    assert n_params == (8 * 40 + 40) + (40 * 4 + 4)  # input layer and the mu head only
    assert torch.allclose(enc(x), vae(x)[0])
    assert not enc.training


def test_vae_sampler_draws_from_the_posterior_of_each_row():
    # Arrange: one row repeated, so every draw comes from the same posterior
    vae = VAE(8, generator=SeedPlan(0).torch("vae"))
    x = torch.randn(1, 8, generator=SeedPlan(0).torch("x")).repeat(20000, 1)
    with torch.no_grad():
        mu, logvar = (t[0] for t in vae(x[:1]))
    # Act
    sampler = vae.sampler()
    draws = sampler(x, torch.Generator().manual_seed(5))
    again = sampler(x, torch.Generator().manual_seed(5))
    # Assert: the draws' mean and spread are the posterior's; a seed repeats them; no decoder, frozen
    assert torch.allclose(draws.mean(0), mu, atol=4 * float(torch.exp(0.5 * logvar).max()) / 20000 ** 0.5)
    assert torch.allclose(draws.std(0), torch.exp(0.5 * logvar), rtol=0.05)
    assert torch.equal(draws, again) and not torch.allclose(draws[0], draws[1])
    assert not any(p.requires_grad for p in sampler.parameters()) and not sampler.training
    assert sum(p.numel() for p in sampler.parameters()) == (8 * 40 + 40) + 2 * (40 * 4 + 4)


def test_vae_loss_decreases_when_pretrained():
    from securefl.algorithms.training import TrainConfig, as_tensor, fit_vae

    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2)) @ rng.normal(size=(2, 6)) + 0.05 * rng.normal(size=(200, 6))
    vae = VAE(6, generator=SeedPlan(1).torch("init"))

    history = fit_vae(vae, as_tensor(Standardizer.fit(x).transform(x), torch.device("cpu")), epochs=30,
                      config=TrainConfig(batch_size=32), generator=SeedPlan(1).torch("batches"))

    assert len(history) == 30
    assert history[-1] < 0.7 * history[0]


def test_hierarchical_mlp_routes_column_blocks_through_their_encoders():
    net = HierarchicalMLP(3, [4, 6], multiplier=5, generator=SeedPlan(0).torch("h"))

    assert [e[0].out_features for e in net.encoders] == [20, 30]
    assert [e[2].out_features for e in net.encoders] == [2, 3]
    assert net.head[0].in_features == 3 + 2 + 3 and net.head[0].out_features == 5 * 8
    x = torch.randn(5, 13)
    net(x).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.encoders.parameters())
    with pytest.raises(InputError):
        HierarchicalMLP(3, [], multiplier=5)


def test_standardizer_fits_columns_whose_squares_overflow_like_their_rescaled_copy():
    x = np.random.default_rng(0).normal(size=(50, 2))
    huge = x * np.array([1e300, 1.0])

    with np.errstate(all="raise"):  # no overflow reaches the caller
        out = Standardizer.fit(huge).transform(huge)

    np.testing.assert_allclose(out, Standardizer.fit(x).transform(x), rtol=1e-5, atol=1e-6)


def test_a_constant_column_keeps_scale_1_whatever_its_rounding_noise():
    # Arrange: 455 rows of 1000000.1, whose float64 std is ~2e-10, not 0
    fit_rows = np.full((455, 1), 1_000_000.1)
    # Act
    scaler = Standardizer.fit(fit_rows)
    # Assert: the training rows map to 0, a test row one unit away to 1 (not to 4e9)
    assert scaler.scale[0] == 1.0
    np.testing.assert_allclose(scaler.transform(np.array([[1_000_000.1], [1_000_001.1]]))[:, 0], [0.0, 1.0],
                               atol=1e-6)


def test_columns_near_float64s_limit_transform_without_overflow_and_past_float32_is_refused():
    # Arrange: x - mean overflows float64 for these columns, x / scale does not
    huge = np.array([[1.7e308], [-1.7e308], [1.7e308]])
    # Act
    with np.errstate(all="raise"):
        out = Standardizer.fit(huge).transform(huge)
    # Assert
    np.testing.assert_allclose(out[:, 0], [0.7071068, -1.4142135, 0.7071068], rtol=1e-6)
    with pytest.raises(InputError, match="column 0: a value lies beyond float32's range"):
        Standardizer.fit(np.array([[-1e300]])).transform(np.array([[0.0]]))


def test_standardizer_refuses_non_finite_columns():
    with pytest.raises(InputError, match="finite"):
        Standardizer.fit(np.array([[1.0], [np.inf]]))


def test_standardizer_uses_only_the_rows_it_was_fitted_on():
    fit_rows = np.array([[1.0, 5.0], [3.0, 5.0]])
    scaler = Standardizer.fit(fit_rows)

    out = scaler.transform(np.array([[2.0, 5.0], [5.0, 6.0]]))

    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[0.0, 0.0], [3.0, 1.0]])  # constant column keeps scale 1
    with pytest.raises(InputError):
        scaler.transform(np.zeros((2, 3)))
    with pytest.raises(InputError):
        Standardizer.fit(np.zeros((0, 2)))
