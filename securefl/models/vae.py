"""The variational autoencoder a passive party pretrains in STFL (paper eq. 5).

Shape (section V of the paper): encoder Linear(n, h) -> ReLU -> two heads
Linear(h, z) for the posterior mean mu and log-variance; decoder
Linear(z, h) -> ReLU -> Linear(h, n); h = 5 n and z = max(1, n // 2).

Loss, eq. 5: ``KL(q(z|x) || N(0, I)) - E_q[log p(x|z)]`` with one reparameterised
sample per row. The decoder is a Gaussian with unit variance, so the expected
negative log-likelihood is ``0.5 * ||x - x_hat||^2`` up to a constant (an MSE
reconstruction term, suited to standardised real-valued features). Both terms are
summed over features and averaged over the batch.

After pretraining the decoder stays behind. :meth:`VAE.sampler` keeps both encoder
heads and gives one posterior draw per row: the paper's "latent vector z" and what an
STFL passive party sends by default (``latent="sample"``). :meth:`VAE.encoder` returns
a frozen copy of the mean path x -> mu only, for ``latent="mean"`` (deterministic, so
the active party's classifier sees the same input for a row every epoch, but it gives
more of the features away: ``benchmarks/results/latent_leakage.md``).
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from securefl.models.mlp import check_width, hidden_width, latent_width, seeded_


def reparameterise(mu: torch.Tensor, logvar: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
    """A posterior draw ``mu + sigma * eps`` for standard normal ``eps``."""
    return mu + eps * torch.exp(0.5 * logvar)


class VAE(nn.Module):
    """A one-hidden-layer Gaussian VAE for ``n_inputs`` standardised features."""

    def __init__(self, n_inputs: int, *, multiplier: int = 5, latent: int | None = None,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        check_width(n_inputs, "n_inputs")
        check_width(multiplier, "multiplier")
        latent = latent_width(n_inputs) if latent is None else check_width(latent, "latent")
        hidden = hidden_width(n_inputs, multiplier)
        self.n_inputs, self.hidden, self.latent = n_inputs, hidden, latent
        self.body = nn.Sequential(nn.Linear(n_inputs, hidden), nn.ReLU())
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.decoder = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, n_inputs))
        seeded_(self, generator)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and log-variance of ``x``."""
        h = self.body(x)
        return self.mu(h), self.logvar(h)

    def loss(self, x: torch.Tensor, generator: torch.Generator | None = None, *,
             noise: torch.Tensor | None = None) -> torch.Tensor:
        """Eq. 5 on a batch: mean over rows of KL + Gaussian reconstruction NLL.

        The reparameterisation noise is ``noise`` (standard normal, ``(rows, latent)``)
        if given, else drawn here from ``generator``."""
        mu, logvar = self(x)
        eps = torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype) if noise is None else noise
        recon = self.decoder(reparameterise(mu, logvar, eps))
        nll = 0.5 * (recon - x).pow(2).sum(dim=1)
        kl = -0.5 * (1.0 + logvar - mu.pow(2) - logvar.exp()).sum(dim=1)
        return (nll + kl).mean()

    def sampler(self) -> "LatentSampler":
        """A frozen copy of the encoder with both heads: ``x -> mu + sigma * eps`` (no decoder)."""
        return LatentSampler(self)

    def encoder(self) -> nn.Sequential:
        """A frozen copy of the mean path x -> mu (no decoder, no log-variance head)."""
        enc = nn.Sequential(copy.deepcopy(self.body[0]), nn.ReLU(), copy.deepcopy(self.mu))
        for param in enc.parameters():
            param.requires_grad_(False)
        return enc.eval()


class LatentSampler(nn.Module):
    """One posterior draw per row, ``z = mu + exp(logvar / 2) * eps``, from a frozen encoder."""

    def __init__(self, vae: VAE) -> None:
        super().__init__()
        self.body, self.mu, self.logvar = (copy.deepcopy(m) for m in (vae.body, vae.mu, vae.logvar))
        for param in self.parameters():
            param.requires_grad_(False)
        self.eval()

    def forward(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """A draw of z for each row of ``x``; ``eps`` comes from ``generator`` (on ``x``'s device)."""
        h = self.body(x)
        mu, logvar = self.mu(h), self.logvar(h)
        return reparameterise(mu, logvar, torch.randn(mu.shape, generator=generator, device=mu.device,
                                                      dtype=mu.dtype))


__all__ = ["LatentSampler", "VAE"]
