"""Training steps as CUDA graph replays: the same run as the eager loop (GPU only)."""

from __future__ import annotations

import pytest
import torch

from securefl.algorithms.training import TrainConfig, fit, fit_classifier
from securefl.models import mlp
from securefl.models.vae import VAE

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA GPU")
CUDA = torch.device("cuda")


def _generator(seed: int) -> torch.Generator:
    gen = torch.Generator(device=CUDA)
    gen.manual_seed(seed)
    return gen


def _classifier_run(graphs: bool, rows: int) -> tuple[list[float], list[torch.Tensor], torch.Tensor]:
    x = torch.randn(rows, 6, generator=torch.Generator().manual_seed(0)).to(CUDA)
    y = (x[:, 0] - x[:, 3] > 0).float()
    model = mlp(6, 30, generator=torch.Generator().manual_seed(1)).to(CUDA)
    gen = _generator(2)
    history = fit_classifier(model, x, y, config=TrainConfig(epochs=4, batch_size=32, device="cuda",
                                                             cuda_graphs=graphs), generator=gen)
    return history, [p.detach().clone() for p in model.parameters()], gen.get_state()


@pytest.mark.parametrize("rows", [200, 192, 20])  # a smaller last batch; batches that divide the rows; one batch
def test_graphed_classifier_trains_as_the_eager_loop_does(rows):
    # Act
    eager, graphed = _classifier_run(False, rows), _classifier_run(True, rows)
    # Assert: the same losses and weights up to float32 rounding, the same random draws consumed
    assert graphed[0] == pytest.approx(eager[0], rel=1e-4)
    assert all(torch.allclose(p, q, rtol=1e-4, atol=1e-5) for p, q in zip(eager[1], graphed[1]))
    assert torch.equal(eager[2], graphed[2])


def test_parties_in_two_threads_capture_and_train_at_once_as_each_would_alone():
    # Arrange: STFL's parties train in threads of one process
    from concurrent.futures import ThreadPoolExecutor

    eager = _classifier_run(False, 200)
    # Act
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda _: _classifier_run(True, 200), range(2)))
    # Assert
    for history, weights, _ in runs:
        assert history == pytest.approx(eager[0], rel=1e-4)
        assert all(torch.allclose(p, q, rtol=1e-4, atol=1e-5) for p, q in zip(eager[1], weights))


def _vae_run(graphs: bool) -> tuple[list[float], list[torch.Tensor]]:
    torch.manual_seed(0)
    x = torch.randn(150, 8, device=CUDA)
    vae = VAE(8, generator=torch.Generator().manual_seed(1)).to(CUDA)
    history = fit(vae, lambda xb, noise: vae.loss(xb, noise=noise), (x,), epochs=3, batch_size=64, lr=1e-2,
                  generator=_generator(3), noise_width=vae.latent, cuda_graphs=graphs)
    return history, [p.detach().clone() for p in vae.parameters()]


def test_graphed_vae_draws_the_eager_loops_noise_and_trains_alike():
    eager, graphed = _vae_run(False), _vae_run(True)

    assert graphed[0] == pytest.approx(eager[0], rel=1e-4)
    assert all(torch.allclose(p, q, rtol=1e-4, atol=1e-5) for p, q in zip(eager[1], graphed[1]))


def test_the_warm_up_before_capture_leaves_no_trace():
    # Arrange: one batch at a large learning rate, so warm-up steps left in place would move
    # the weights the recorded loss is computed on
    torch.manual_seed(0)
    x = torch.randn(64, 6, device=CUDA)
    y = (x[:, 0] > 0).float()
    first = None
    for graphs in (False, True):
        model = mlp(6, 30, generator=torch.Generator().manual_seed(1)).to(CUDA)
        history = fit_classifier(model, x, y, config=TrainConfig(epochs=1, batch_size=64, lr=0.5, device="cuda",
                                                                 cuda_graphs=graphs), generator=_generator(2))
        first = history if first is None else first
    # Assert: the only batch's loss is that of the initial weights in both runs
    assert history == pytest.approx(first, rel=1e-6)
