"""The GL tabular model: shapes, which parameters are global, seeded initialisation."""

import pytest
import torch

from protocols.errors import InputError
from securefl.models.tabular import GLModel, TabularShape, count, paper_widths

TINY = TabularShape(embed_dim=8, heads=2, blocks=1, ff_dim=8, width=12, gff_hidden=3, head_width=6)


def _seeded(n_features, n_outputs, shape=TINY):
    return GLModel(n_features, n_outputs, shape).seed_(lambda part: torch.Generator().manual_seed(hash(part) % 997))


def test_forward_gives_one_logit_column_per_output():
    # Arrange
    model = GLModel(5, 3, TINY)
    # Act
    out = model(torch.randn(7, 5))
    # Assert
    assert out.shape == (7, 3)


def test_global_and_private_parameters_partition_the_model():
    # Arrange
    model = GLModel(5, 3, TINY)
    # Act
    glob, priv = model.global_parameters(), model.private_parameters()
    # Assert: disjoint, complete, and omega is MLP layers 2-4 only
    assert count(glob) + count(priv) == count(list(model.parameters()))
    expected = sum(count(list(model.mlp[i].parameters())) for i in (1, 2, 3))
    assert count(glob) == expected


def test_global_layers_do_not_depend_on_client_features_or_classes():
    # Arrange: two clients with different input and output spaces, same seed
    a, b = _seeded(5, 3), _seeded(9, 1)
    # Act
    ga, gb = a.global_tensors(), b.global_tensors()
    # Assert: same shapes and same initial values
    assert [t.shape for t in ga] == [t.shape for t in gb]
    assert all(torch.equal(x, y) for x, y in zip(ga, gb))


def test_paper_widths_match_the_papers_federated_counts_within_half_a_percent():
    # Arrange / Act
    cover = GLModel(10, 6, TabularShape(**paper_widths("gl_covertype")))
    heart = GLModel(13, 1, TabularShape(**paper_widths("gl_heart")))
    # Assert: Tables 8 and 9 give 717,640 and 298,688 federated parameters
    assert abs(count(cover.global_parameters()) / 717_640 - 1) < 0.005
    assert abs(count(heart.global_parameters()) / 298_688 - 1) < 0.005


def test_bad_shape_is_an_input_error():
    with pytest.raises(InputError, match="multiple of heads"):
        TabularShape(embed_dim=10, heads=3)


@pytest.mark.parametrize("field, value", [("width", 0), ("blocks", True), ("heads", 2.0)])
def test_non_positive_size_is_an_input_error_naming_the_field(field, value):
    with pytest.raises(InputError, match=f"TabularShape.{field} must be a positive int"):
        TabularShape(**{field: value})


@pytest.mark.parametrize("value", [True, -0.1, 1.0, "0.1"])
def test_bad_dropout_is_an_input_error(value):
    with pytest.raises(InputError, match="TabularShape.dropout must be in"):
        TabularShape(dropout=value)
