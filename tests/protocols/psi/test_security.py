"""What a PSI party receives: only blinded values, of the expected sizes; malformed ones are refused.

These tests read the transport's delivery log, which is exactly what a party saw.
"""

import hashlib
import random
import string

import numpy as np
import pytest

import protocols.psi.parallel as parallel
from protocols.codec import Tag
from protocols.errors import ProtocolError
from protocols.psi import hash_to_curve, psi_passive, psi_two_party
from protocols.psi.curve import id_digest
from protocols.transport import run_parties


def _payload(messages) -> bytes:
    parts = []
    for message in messages:
        for value in message.fields.values():
            parts.append(value.tobytes() if isinstance(value, np.ndarray) else repr(value).encode())
    return b"".join(parts)


def _secret_ids(rng: random.Random, n: int, prefix: str) -> list[str]:
    return [prefix + "".join(rng.choices(string.ascii_letters, k=16)) for _ in range(n)]


def test_received_messages_hold_only_blinded_values(monkeypatch):
    rng = random.Random(1)
    common = _secret_ids(rng, 30, "both-")
    left_ids, right_only = common + _secret_ids(rng, 50, "left-"), _secret_ids(rng, 70, "right-")
    scalars = []

    def recording_new_scalar(real=parallel.new_scalar):
        scalars.append(real())
        return scalars[-1]

    monkeypatch.setattr(parallel, "new_scalar", recording_new_scalar)

    run = run_parties({"left": psi_two_party, "right": psi_two_party}, record=True,
                      kwargs={"left": {"peer": "right", "ids": left_ids},
                              "right": {"peer": "left", "ids": right_only + common}})

    log = run.logs["left"]
    assert [(str(m.tag), sorted(m.fields)) for m in log] == [("r0/psi/singles", ["points"]),
                                                            ("r0/psi/doubles", ["tags"])]
    assert log[0]["points"].shape == (100, 32) and log[1]["tags"].shape == (80, 16)
    payload = _payload(log)
    assert len(payload) == 100 * 32 + 80 * 16  # nothing but blinded values
    for secret in right_only:
        raw = secret.encode()
        for leak in (raw, hashlib.sha256(raw).digest(), id_digest(raw), hash_to_curve(raw),
                     hash_to_curve(raw)[:16]):
            assert leak not in payload
    assert len(scalars) == 2
    everything = _payload(run.logs["left"] + run.logs["right"]) + repr(run.results).encode()
    assert not any(s in everything for s in scalars)


def _valid_points(k: int) -> np.ndarray:
    rows = sorted(hash_to_curve(f"fake-{i}".encode()) for i in range(k))
    return np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(k, 32)


def _fake_peer(transport, *, singles, doubles=None):
    """Send ``singles``; if ``doubles`` is given, answer the real party's singles with it."""
    transport.send("real", Tag(0, "psi", "singles"), points=singles)
    if doubles is not None:
        transport.recv("real", Tag(0, "psi", "singles"))
        transport.send("real", Tag(0, "psi", "doubles"), tags=doubles)
    _stay(transport)


def _stay(transport):
    """Stay until the real party is done (it fails, or the wait ends), so it never sends to a party gone."""
    from protocols.errors import PeerFailedError
    try:
        transport.recv("real", Tag(99, "psi", "never"), timeout=30)
    except PeerFailedError:
        pass


BAD = {
    "points of 31 bytes": ({"singles": np.zeros((3, 31), np.uint8)}, "rows of 32 bytes"),
    "points as bytes": ({"singles": b"\x01" * 96}, "expected a uint8 array"),
    "points as int64": ({"singles": np.zeros((3, 32), np.int64)}, "rows of 32 bytes"),
    "flat points": ({"singles": np.zeros(96, np.uint8)}, "rows of 32 bytes"),
    "unsorted points": ({"singles": _valid_points(4)[::-1].copy()}, "not sorted"),
    "repeated points": ({"singles": _valid_points(2)[[0, 0]].copy()}, "not sorted"),
    "small-order point": ({"singles": np.vstack([np.zeros((1, 32), np.uint8), _valid_points(2)])},
                          "small-order"),
    "top bit set": ({"singles": _valid_points(3) | np.array([0] * 31 + [0x80], np.uint8)}, "canonical"),
    "u = p": ({"singles": np.frombuffer((2**255 - 19).to_bytes(32, "little"), np.uint8).reshape(1, 32)},
              "canonical"),
    "too few tags": ({"singles": _valid_points(2), "doubles": np.zeros((2, 16), np.uint8)},
                     "expected 3 rows"),
    "tags of 32 bytes": ({"singles": _valid_points(2), "doubles": np.zeros((3, 32), np.uint8)},
                         "rows of 16 bytes"),
    "repeated tags": ({"singles": _valid_points(2), "doubles": np.zeros((3, 16), np.uint8)}, "repeat"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_malformed_peer_messages_are_protocol_errors(case):
    fake_kw, message = BAD[case]

    with pytest.raises(ProtocolError, match=message):
        run_parties({"real": psi_two_party, "fake": _fake_peer}, timeout=10,
                    kwargs={"real": {"peer": "fake", "ids": ["a", "b", "c"]}, "fake": fake_kw})


def _fake_active(transport, *, rows):
    transport.send("real", Tag(0, "psi", "singles"), points=_valid_points(2))
    transport.recv("real", Tag(0, "psi", "doubles"))
    transport.send("real", Tag(0, "psi", "rows"), rows=rows)


@pytest.mark.parametrize("rows", [np.array([0, 0]), np.array([5]), np.array([-1]), np.zeros((1, 1), np.int64),
                                  np.array([0.0])])
def test_malformed_positions_from_the_active_party_are_protocol_errors(rows):
    with pytest.raises(ProtocolError, match="positions"):
        run_parties({"real": psi_passive, "fake": _fake_active}, timeout=10,
                    kwargs={"real": {"active": "fake", "ids": ["a", "b", "c"]}, "fake": {"rows": rows}})
