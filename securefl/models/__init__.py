"""Model builders shared by the algorithms and baselines: MLPs, the STFL VAE, scalers."""

from securefl.models.mlp import HierarchicalMLP, hidden_width, latent_width, mlp, seeded_
from securefl.models.scaling import Standardizer
from securefl.models.vae import VAE

__all__ = ["HierarchicalMLP", "Standardizer", "VAE", "hidden_width", "latent_width", "mlp", "seeded_"]
