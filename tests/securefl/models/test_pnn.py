"""CHFL's progressive network: eq. 6-7 on hand-set weights, stacked columns equal separate ones."""

import pytest
import torch

from protocols.errors import InputError
from securefl.models.pnn import CHFLNet, Column, UniqueColumns


def _set_(net: CHFLNet) -> None:
    """Hand-set weights: 1 common and 1 unique input, hidden (2,), 2 classes."""
    with torch.no_grad():
        c1, c2 = net.common.layers
        c1.weight.copy_(torch.tensor([[1.0], [-1.0]]))
        c1.bias.copy_(torch.tensor([0.0, 0.5]))
        c2.weight.copy_(torch.tensor([[1.0, 2.0], [0.0, -1.0]]))
        c2.bias.copy_(torch.tensor([0.1, 0.2]))
        u = net.unique
        u.weights[0].copy_(torch.tensor([[[2.0, -3.0]]]))      # [G, in=1, out=2]
        u.biases[0].copy_(torch.tensor([[[0.0, 1.0]]]))
        u.weights[1].copy_(torch.tensor([[[1.0, 0.0], [1.0, 1.0]]]))
        u.biases[1].copy_(torch.tensor([[[0.0, -0.5]]]))
        u.laterals[0].copy_(torch.tensor([[[0.5, 1.0], [2.0, 0.0]]]))


def test_forward_matches_equations_6_and_7():
    # Arrange
    net = CHFLNet(1, 1, 2, hidden=(2,), mus=(0.5,))
    _set_(net)
    x_c, x_u = torch.tensor([[2.0]]), torch.tensor([[1.0]])
    # Act
    out = net(x_c, x_u)[0, 0]
    # Assert: by hand. Common: z_c1 = relu([2, -1.5]) = [2, 0]; z_c2 = [2.1, 0.2]
    # unique: z_u1 = relu([2, -3] + [0, 1]) = [2, 0]
    # z_u2 = W^T z_u1 + b + mu * U^T z_c1 = [2, 0] + [0, -0.5] + 0.5 * [1, 2] = [2.5, 0.5]
    expected = torch.tensor([2.1 + 2.5, 0.2 + 0.5])
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(torch.softmax(out, 0), torch.softmax(expected, 0))


def test_mu_zero_cuts_the_lateral_connection():
    # Arrange
    net = CHFLNet(1, 1, 2, hidden=(2,), mus=(0.0,))
    _set_(net)
    # Act
    out = net(torch.tensor([[2.0]]), torch.tensor([[1.0]]))[0, 0]
    # Assert: z_u2 = [2, 0] + [0, -0.5]
    torch.testing.assert_close(out, torch.tensor([2.1 + 2.0, 0.2 - 0.5]))


def test_stacked_columns_equal_columns_built_one_by_one():
    # Arrange
    gen = torch.Generator().manual_seed(3)
    stacked = UniqueColumns(3, (4, 5), 2, mus=(0.0, 0.7), generator=gen)
    single = UniqueColumns(3, (4, 5), 2, mus=(0.7,))
    with torch.no_grad():
        for group in ("weights", "biases", "laterals"):
            for mine, theirs in zip(getattr(single, group), getattr(stacked, group)):
                mine.copy_(theirs[1:2])
    common = Column(2, (4, 5), 2, generator=gen).activations(torch.randn(6, 2, generator=gen))
    x_u = torch.randn(6, 3, generator=gen)
    # Act / Assert
    torch.testing.assert_close(stacked(x_u, common)[1], single(x_u, common)[0])


def test_per_mu_generators_draw_each_column_from_its_own_stream():
    # Arrange: mu = 0.7's column, beside one other mu and beside two
    def gens(*seeds):
        return [torch.Generator().manual_seed(s) for s in seeds]
    pair = UniqueColumns(3, (4, 5), 2, mus=(0.0, 0.7), generators=gens(1, 2))
    triple = UniqueColumns(3, (4, 5), 2, mus=(0.3, 0.7, 1.0), generators=gens(9, 2, 8))
    # Act / Assert: the same stream gives the same column, a different one another
    for group in ("weights", "biases", "laterals"):
        for mine, theirs in zip(getattr(pair, group), getattr(triple, group)):
            torch.testing.assert_close(mine[1], theirs[1], rtol=0, atol=0)
            assert not torch.equal(mine[0], theirs[0])
    assert [tuple(w.shape) for w in pair.weights] == [(2, 3, 4), (2, 4, 5), (2, 5, 2)]


@pytest.mark.parametrize("kwargs", [
    {"generator": torch.Generator(), "generators": [torch.Generator(), torch.Generator()]},
    {"generators": [torch.Generator()]},
])
def test_generators_must_be_one_per_mu_and_alone(kwargs):
    with pytest.raises(InputError, match="one generator per mu"):
        UniqueColumns(3, (4,), 2, mus=(0.0, 0.5), **kwargs)


def test_common_column_gets_no_gradient_from_the_unique_loss():
    # Arrange
    net = CHFLNet(2, 2, 3, hidden=(4, 4), mus=(1.0,), generator=torch.Generator().manual_seed(0))
    # Act
    net(torch.randn(5, 2), torch.randn(5, 2)).sum().backward()
    # Assert
    assert all(p.grad is None for p in net.common.parameters())
    assert all(p.grad is not None for p in net.unique.parameters())


def test_mu_outside_unit_interval_is_rejected():
    with pytest.raises(InputError, match="mus"):
        UniqueColumns(2, (3,), 2, mus=(1.5,))
