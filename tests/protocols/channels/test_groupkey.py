"""Group key: the dealer's fresh key reaches every member sealed; nobody else can open it."""

from __future__ import annotations

import pytest

from protocols.channels.groupkey import PUBLIC_BYTES, SEALED_BYTES, GroupKeyMember, pack, unpack
from protocols.errors import CryptoError, ProtocolError

CONTEXT = "test group"


def _group(*names, context=CONTEXT):
    return {n: GroupKeyMember(n, context=context) for n in names}


def test_every_member_opens_the_key_the_dealer_sealed_to_it():
    # Arrange
    members = _group("dealer", "a", "b", "c")
    publics = {n: m.public for n, m in members.items()}
    # Act
    key, sealed = members["dealer"].deal(publics)
    opened = {n: members[n].receive("dealer", publics["dealer"], sealed[n]) for n in ("a", "b", "c")}
    # Assert
    assert set(sealed) == {"a", "b", "c"} and all(len(s) == SEALED_BYTES for s in sealed.values())
    assert len(key) == 32 and set(opened.values()) == {key}
    assert all(key not in s for s in sealed.values())


def test_a_key_sealed_to_one_member_opens_for_no_other():
    members = _group("dealer", "a", "b")
    publics = {n: m.public for n, m in members.items()}
    _, sealed = members["dealer"].deal(publics)
    with pytest.raises(CryptoError):
        members["b"].receive("dealer", publics["dealer"], sealed["a"])


@pytest.mark.parametrize("change", ["flip a bit", "another dealer name", "another dealer key", "another context"])
def test_anything_changed_in_transit_or_context_fails_to_open(change):
    # Arrange: with "another context" the receiver was made for another group than the dealer's
    members = {"dealer": GroupKeyMember("dealer", context=CONTEXT),
               "a": GroupKeyMember("a", context="other" if change == "another context" else CONTEXT)}
    publics = {n: m.public for n, m in members.items()}
    _, sealed = members["dealer"].deal(publics)
    receiver, dealer, dealer_key, box = members["a"], "dealer", publics["dealer"], sealed["a"]
    if change == "flip a bit":
        box = bytes([box[0] ^ 1]) + box[1:]
    elif change == "another dealer name":
        dealer = "mallory"
    elif change == "another dealer key":
        dealer_key = GroupKeyMember("mallory", context=CONTEXT).public
    # Act / Assert
    with pytest.raises(CryptoError):
        receiver.receive(dealer, dealer_key, box)


def test_each_dealing_draws_a_fresh_key():
    first, second = _group("dealer", "a"), _group("dealer", "a")
    keys = [g["dealer"].deal({n: m.public for n, m in g.items()})[0] for g in (first, second)]
    assert keys[0] != keys[1]


def test_a_member_deals_once_so_no_wrapping_key_and_nonce_seal_twice():
    # Arrange: the wrapping key of (dealer, a) is fixed by their key pairs, the nonce is 0
    members = _group("dealer", "a")
    publics = {n: m.public for n, m in members.items()}
    members["dealer"].deal(publics)
    # Act / Assert
    with pytest.raises(ProtocolError, match="has dealt its group key"):
        members["dealer"].deal(publics)


def test_records_round_trip_and_malformed_ones_are_refused():
    records = {"a": b"\x01" * PUBLIC_BYTES, "b": b"\x02" * PUBLIC_BYTES}
    fields = pack(records, PUBLIC_BYTES)
    assert unpack(fields, PUBLIC_BYTES, sender="hub") == records
    for bad in ({**fields, "blob": fields["blob"][:-1]}, {**fields, "names": ["a", "a"]},
                {**fields, "names": "ab"}, {"names": [], "blob": None}):
        with pytest.raises(ProtocolError, match="from 'hub' are malformed"):
            unpack(bad, PUBLIC_BYTES, sender="hub")
