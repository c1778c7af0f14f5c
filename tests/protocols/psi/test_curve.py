"""The PSI primitives: X25519 known answers, Elligator 2 known answers, commutativity."""

import gmpy2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.errors import ProtocolError
from protocols.psi.curve import (A, P, blind_chunk, hash_and_blind_chunk, hash_to_curve,
                                 hash_to_curve_batch, hash_to_field, map_to_curve, multiplier,
                                 new_scalar)

# RFC 7748 section 5.2: (scalar, input u, output u)
RFC7748_X25519 = [
    ("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
     "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
     "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"),
    ("4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
     "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
     "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957"),
]
# RFC 7748 section 6.1
ALICE = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"
ALICE_PUB = "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
BOB = "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"
BOB_PUB = "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"
SHARED = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
BASE = (9).to_bytes(32, "little")

# RFC 9380 appendix J.4 (curve25519 suites): field element u -> map_to_curve(u).x
RFC9380_ELL2 = [
    ("65d61dfa58cf932cd60f65f24739d1afe89442e4a3b2e6ea9d65b0865f148901",
     "1241e151a4da26769778a6c8aa5a219ff608c6c31bea49a0558487a102bf6355"),
    ("1393600fd74775f0d19a8ebd282b05349641a8b079c71030bf1bf370c41acef9",
     "25c758d9c7a11a43e72d3ddd7976458330fa9e37f63991457fac99a70253cfba"),
    ("3e2240ce35b52e6ce7f2cc4c3e57c03bc1619494256e495dadadb10dcc2675e8",
     "6c70b60bbea45867f1e270af0812137ac64c8931370dae67a4130141f9bbacb1"),
    ("6719884a782571b55353a8f2946a3e42430f0c769ce85d1a47026d491452b773",
     "64aaf5ae99e65460ba87f7f3c6871a66c3c5d3e671b33fe723603c0eed7b9922"),
    ("60dee63d38dba6095eeb95ea343132b6f33d84e809d92a64ba6f348554c94481",
     "2b15e08da01b40a96b46f51cdabf3aeeb75ea9bf223eeb217638d23f6d849a11"),
    ("607e4b11d1b17bad8d482b7a4603486b403875740ed3a643fb948c95c967bb87",
     "2a263d203c2c54af0205dae921d2f8a24fe3e7aee9f6e401eb385b81412aa964"),
]


@pytest.mark.parametrize("scalar, u, expected", RFC7748_X25519)
def test_x25519_rfc7748_vectors(scalar, u, expected):
    assert multiplier(bytes.fromhex(scalar))(bytes.fromhex(u)).hex() == expected


def test_x25519_rfc7748_diffie_hellman():
    alice, bob = multiplier(bytes.fromhex(ALICE)), multiplier(bytes.fromhex(BOB))

    assert alice(BASE).hex() == ALICE_PUB and bob(BASE).hex() == BOB_PUB
    assert alice(bytes.fromhex(BOB_PUB)).hex() == SHARED == bob(bytes.fromhex(ALICE_PUB)).hex()


@pytest.mark.parametrize("u, x", RFC9380_ELL2)
def test_elligator2_rfc9380_vectors(u, x):
    assert map_to_curve(int(u, 16)) == int(x, 16)


def _on_curve(u: int) -> bool:
    """Whether u is the u-coordinate of a point of curve25519 (not of its twist)."""
    return gmpy2.jacobi(u * (u * (u + A) + 1) % P, P) >= 0


def test_hashed_ids_land_on_the_curve_never_the_twist():
    data = [f"id-{i}".encode() for i in range(300)]

    points = [int.from_bytes(hash_to_curve(d), "little") for d in data]
    raw = [hash_to_field(d) for d in data]  # the digest used directly as u, without Elligator 2

    assert all(_on_curve(u) and 0 < u < P for u in points)
    assert 100 < sum(not _on_curve(u) for u in raw) < 200  # about half would be twist points


def test_hash_is_domain_separated_and_length_prefixed():
    assert hash_to_field(b"") != hash_to_field(b"\x00")
    assert hash_to_curve(b"ab") != hash_to_curve(b"ba")
    assert len({hash_to_curve(s.encode()) for s in ["1", "01", "1.0", " 1", "1 "]}) == 5


def test_batch_hashing_equals_one_by_one():
    items = [f"{i}".encode() for i in range(200)] + [b"", "\u00e9".encode()]

    assert hash_to_curve_batch(items) == [hash_to_curve(i) for i in items]
    assert hash_to_curve_batch([]) == []


def test_kernels_agree_with_the_primitives():
    scalar, ids = new_scalar(), [b"a", b"", "\u00e9".encode()]
    mul = multiplier(scalar)
    lengths = b"".join(len(i).to_bytes(8, "little") for i in ids)

    singles = hash_and_blind_chunk(scalar, b"".join(ids), lengths)

    assert singles == b"".join(mul(hash_to_curve(i)) for i in ids)
    assert blind_chunk(scalar, singles, 16) == b"".join(mul(singles[k:k + 32])[:16] for k in (0, 32, 64))


def test_small_order_point_is_a_protocol_error():
    with pytest.raises(ProtocolError, match="small-order"):
        multiplier(new_scalar())(bytes(32))


@settings(max_examples=20, deadline=None)
@given(st.binary(min_size=32, max_size=32), st.binary(min_size=32, max_size=32), st.text())
def test_blinding_commutes(a, b, text):
    point = hash_to_curve(text.encode("utf-8", "surrogatepass"))
    blind_a, blind_b = multiplier(a), multiplier(b)

    assert blind_a(blind_b(point)) == blind_b(blind_a(point))
