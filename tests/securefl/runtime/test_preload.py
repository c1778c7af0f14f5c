"""What a run loads inside its clock: nothing that a fresh process would load only once."""

import subprocess
import sys

import pytest
import torch

CHECK = """
import sys
from securefl.runtime.preload import preload
import numpy as np
import torch
from securefl.runtime.classification import classification_metrics
from securefl.runtime.leakage import label_leakage
from securefl.runtime.metrics import binary_metrics
labels, scores = np.array([0, 1, 0, 1]), np.array([0.2, 0.7, 0.4, 0.6])
binary_metrics(labels, scores)
classification_metrics(labels, np.stack([1 - scores, scores], axis=1))
label_leakage(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.1], [0.1, 1.0]]), labels)
print("sklearn" if any(name.startswith("sklearn") for name in sys.modules) else "no sklearn")
preload()
before = set(sys.modules)
torch.optim.Adam([torch.zeros(2, requires_grad=True)])
torch.optim.SGD([torch.zeros(2, requires_grad=True)])
print(sorted(set(sys.modules) - before))
"""


def test_metrics_need_no_sklearn_and_after_preload_the_first_optimizer_imports_nothing():
    # Arrange / Act: a fresh interpreter, since this one has imported both long ago
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120, check=True)
    # Assert
    assert out.stdout.splitlines() == ["no sklearn", "[]"], out.stdout + out.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_preload_on_a_cuda_device_makes_its_context_before_the_clock():
    # Act
    from securefl.runtime.preload import preload

    preload("cuda")
    # Assert
    assert torch.cuda.is_initialized()
