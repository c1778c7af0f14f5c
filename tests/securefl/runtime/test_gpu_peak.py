"""securefl.runtime.GPUPeak: the GPU memory a block took, measured only where there is a GPU."""

import pytest
import torch

from protocols.errors import InputError
from securefl.runtime import GPUPeak


def test_on_cpu_there_is_nothing_to_measure():
    with GPUPeak("cpu") as peak:
        torch.ones(1000).sum()

    assert peak.mib is None and peak.into({"seconds": 1.0}) == {"seconds": 1.0}


def test_a_missing_gpu_is_the_usual_one_line_device_error():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the error is for machines without it")
    with pytest.raises(InputError, match="CUDA is not available"):
        GPUPeak("cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_the_peak_covers_a_tensor_made_and_freed_inside_the_block():
    with GPUPeak("cuda") as peak:
        block = torch.empty(64 * 2**20, dtype=torch.uint8, device="cuda")  # 64 MiB
        del block

    assert peak.mib is not None and peak.mib >= 64
    assert peak.into({})["gpu_peak_mib"] == peak.mib


def test_inside_the_block_nothing_is_measured_yet(fake_gpu):
    # Arrange: a device that looks like a GPU, with the allocator's counters faked (fake_gpu)
    # Act
    with GPUPeak("cuda") as peak:
        inside = peak.into({})
    after = peak.into({})
    with GPUPeak.of_run("cuda", "torch") as elsewhere:  # parties in other processes: not this one's memory
        pass
    # Assert: the peak exists once the block has ended
    assert inside == {} and after == {"gpu_peak_mib": fake_gpu}
    assert elsewhere.into({}) == {}
