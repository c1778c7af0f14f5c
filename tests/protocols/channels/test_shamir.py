"""Shamir secret sharing over GF(2^521 - 1)."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.channels import shamir
from protocols.errors import CryptoError, InputError

SECRET = bytes(range(32))


def test_any_t_of_n_shares_reconstruct():
    shares = shamir.split(SECRET, 5, 3)

    for subset in itertools.permutations(shares, 3):
        assert shamir.reconstruct(subset, threshold=3, length=32) == SECRET


def test_more_than_t_shares_also_reconstruct():
    shares = shamir.split(SECRET, 6, 4)

    assert shamir.reconstruct(shares, threshold=4, length=32) == SECRET


def test_fewer_than_t_shares_fail():
    shares = shamir.split(SECRET, 5, 3)

    with pytest.raises(InputError, match="need 3 shares"):
        shamir.reconstruct(shares[:2], threshold=3, length=32)


def test_interpolating_fewer_than_t_shares_gives_a_wrong_value():
    secret_int = int.from_bytes(SECRET, "big")
    shares = shamir.split(SECRET, 5, 3)

    for subset in itertools.combinations(shares, 2):
        assert shamir.interpolate_at_zero(subset) != secret_int


def test_known_answer_for_a_fixed_polynomial():
    # f(x) = 7 + 3x + 2x^2: f(1) = 12, f(2) = 21, f(3) = 34
    shares = [shamir.Share(1, 12), shamir.Share(2, 21), shamir.Share(3, 34)]

    assert shamir.interpolate_at_zero(shares) == 7
    assert shamir.interpolate_at_zero(shares[1:] + shares[:1]) == 7


def test_lagrange_weights_evaluate_the_polynomial_anywhere():
    # f(x) = 7 + 3x + 2x^2 through x = 1, 2, 3: f(0) = 7, f(5) = 72
    xs, ys = [1, 2, 3], [12, 21, 34]

    for at, expected in ((0, 7), (5, 72), (2, 21)):
        weights = shamir.lagrange_weights(xs, at)
        assert sum(w * y for w, y in zip(weights, ys)) % shamir.PRIME == expected


def test_reconstruct_all_equals_reconstruct_for_each_secret():
    secrets = [bytes(range(32)), bytes(32), b"\xff" * 32]
    share_sets = [shamir.split(s, 6, 4) for s in secrets]

    assert shamir.reconstruct_all(share_sets, threshold=4, length=32) == secrets
    assert shamir.reconstruct_all([], threshold=4, length=32) == []


@pytest.mark.parametrize("wrong", [0, 3, 5], ids=["among the first t", "last of the first t", "a spare"])
def test_one_wrong_share_among_more_than_t_is_caught(wrong):
    # Arrange: before, only the first t shares were read and a wrong one gave a wrong secret silently
    shares = shamir.split(SECRET, 6, 4)
    shares[wrong] = shamir.Share(shares[wrong].x, shares[wrong].y ^ (1 << 100))
    # Act / Assert
    with pytest.raises(CryptoError, match="revealed shares are inconsistent"):
        shamir.reconstruct_all([shamir.split(SECRET, 6, 4), shares], threshold=4, length=32)


def test_reconstruct_all_needs_the_same_xs_for_every_secret():
    first, second = shamir.split(SECRET, 5, 3), shamir.split(SECRET, 5, 3)

    with pytest.raises(InputError, match="same x's"):
        shamir.reconstruct_all([first, second[::-1]], threshold=3, length=32)
    with pytest.raises(InputError, match="need 3 shares"):
        shamir.reconstruct_all([first[:2], second[:2]], threshold=3, length=32)


def test_t_minus_one_shares_are_independent_of_the_secret():
    # with t = 2, one share of secret A is consistent with secret B via some line
    share = shamir.split(SECRET, 3, 2)[0]
    other_secret = 12345
    slope = (share.y - other_secret) * pow(share.x, -1, shamir.PRIME) % shamir.PRIME
    fake = shamir.Share(2, (other_secret + 2 * slope) % shamir.PRIME)

    assert shamir.interpolate_at_zero([share, fake]) == other_secret


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=1, max_size=64), st.integers(2, 7), st.data())
def test_round_trip_property(secret, n, data):
    t = data.draw(st.integers(1, n))
    shares = shamir.split(secret, n, t)
    chosen = data.draw(st.permutations(shares))[:t]

    assert shamir.reconstruct(chosen, threshold=t, length=len(secret)) == secret


def test_wire_form_round_trip_and_repr_hides_values():
    share = shamir.split(SECRET, 3, 2)[1]

    assert shamir.Share.from_bytes(share.x, share.y_bytes()) == share
    assert len(share.y_bytes()) == shamir.SHARE_BYTES
    assert str(share.y) not in repr(share)


@pytest.mark.parametrize("call", [
    lambda: shamir.split(SECRET, 3, 4),
    lambda: shamir.split(SECRET, 3, 0),
    lambda: shamir.split(bytes(65), 3, 2),
    lambda: shamir.interpolate_at_zero([shamir.Share(1, 5), shamir.Share(1, 6)]),
    lambda: shamir.Share(0, 1),
    lambda: shamir.Share(1, shamir.PRIME),
    lambda: shamir.Share.from_bytes(1, b"\x00" * 10),
])
def test_bad_arguments_are_input_errors(call):
    with pytest.raises(InputError):
        call()
