"""The federation runtime shared by algorithms and baselines: devices, seeds, metrics, results."""

from securefl.runtime.devices import GPUPeak, resolve_device
from securefl.runtime.metrics import binary_metrics, finite_scores
from securefl.runtime.seeds import SeedPlan

__all__ = ["GPUPeak", "SeedPlan", "binary_metrics", "finite_scores", "resolve_device"]
