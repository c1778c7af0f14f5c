"""TDCD's natural-client setup: IDs to the hub, silos compared by digest, the same run as in one process."""

from dataclasses import replace

import numpy as np
import pytest

from protocols.errors import InputError, ProtocolError
from protocols.transport import run_parties
from securefl.algorithms.tdcd import TDCDConfig
from securefl.algorithms.tdcd_hub import run_tdcd
from protocols.channels.groupkey import GroupKeyMember
from securefl.algorithms.tdcd_network import client_party, hub_party
from securefl.data.tdcd_clients import ClientRows, natural_split

CONFIG = TDCDConfig(rounds=4, local_steps=2, batch_size=6, lr=0.05, seed=3)


def _silos(rows=50, seed=0, drop=None):
    """Two silos (3 and 2 columns) whose clients hold the samples in different, shuffled groupings."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 5))
    y = x @ rng.normal(size=5)
    ids = [f"id{i:03d}" for i in range(rows)]
    silos = []
    for j, (cols, clients) in enumerate((((0, 1, 2), 2), ((3, 4), 2))):
        order = rng.permutation(rows)
        if drop is not None and j == 1:
            order = order[order != drop]
        parts = np.array_split(order, clients)
        silos.append((f"hub{j}", [ClientRows(f"s{j}c{k}", tuple(ids[i] for i in p), x[p][:, cols], y[p],
                                             tuple(f"f{c}" for c in cols)) for k, p in enumerate(parts)]))
    return silos


def _networked(silos, config, backend="inprocess", record=False):
    hubs = [hub for hub, _ in silos]
    roles, kwargs = {}, {}
    for j, (hub, clients) in enumerate(silos):
        roles[hub] = hub_party
        kwargs[hub] = {"silo": j, "clients": [c.name for c in clients], "hubs": hubs, "config": config}
        for c in clients:
            roles[c.name] = client_party
            kwargs[c.name] = {"hub": hub, "silo": j, "last": j == len(silos) - 1, "rows": c,
                              "clients": len(clients), "config": config}
    return run_parties(roles, kwargs=kwargs, backend=backend, timeout=30, record=record)


def test_the_setup_gives_the_run_that_every_silo_in_one_process_gives():
    # Arrange
    silos = _silos()
    expected = run_tdcd(natural_split(silos, seed=CONFIG.seed), CONFIG)
    # Act
    run = _networked(silos, CONFIG)
    # Assert: every hub reports the one-process objective curve and test loss
    for hub in ("hub0", "hub1"):
        got = run.results[hub]
        assert [h["objective"] for h in got["history"]] == pytest.approx(
            [h["objective"] for h in expected["history"]], rel=1e-6)
        assert got["test"]["loss"] == pytest.approx(expected["metrics"]["mse"] / 2, rel=1e-6)
    assert expected["history"][-1]["objective"] < expected["history"][0]["objective"]


def test_silos_holding_different_samples_stop_at_the_setup():
    with pytest.raises(ProtocolError, match="hold different sample IDs; align them first"):
        _networked(_silos(drop=7), CONFIG)


def test_silos_with_different_numbers_of_clients_stop_at_the_setup():
    # Arrange: the second silo's rows dealt to three clients instead of two
    silos = _silos()
    rows = silos[1][1]
    ids = [i for c in rows for i in c.ids]
    x, y = np.concatenate([c.x for c in rows]), np.concatenate([c.y for c in rows])
    parts = np.array_split(np.arange(len(ids)), 3)
    silos[1] = ("hub1", [ClientRows(f"s1c{k}", tuple(ids[i] for i in p), x[p], y[p], rows[0].columns)
                         for k, p in enumerate(parts)])
    # Act / Assert: at the setup, naming both counts (from whichever hub stops first), not at round 0
    with pytest.raises(ProtocolError, match=r"\([23] clients\) and 'hub[01]' \([23] clients\) differ: every silo"):
        _networked(silos, CONFIG)


def test_clients_of_one_silo_with_different_columns_are_refused():
    silos = _silos()
    hub, clients = silos[0]
    clients[1] = replace(clients[1], columns=("f0", "f2", "f1"))
    with pytest.raises(InputError, match="client 's0c1' has columns"):
        natural_split(silos, seed=0)
    with pytest.raises(InputError, match="client 's0c1' has columns"):
        _networked(silos, CONFIG)


def _relabel(silos, silo, value):
    """``silos`` with the first row of ``silo``'s first client given the label ``value``."""
    hub, clients = silos[silo]
    y = clients[0].y.copy()
    y[0] = value
    return [*silos[:silo], (hub, [replace(clients[0], y=y), *clients[1:]]), *silos[silo + 1:]]


def test_silos_holding_different_labels_for_a_sample_stop_at_the_setup():
    silos = _relabel(_silos(), 1, 123.0)
    with pytest.raises(InputError, match="silos 'hub0' and 'hub1' hold different labels for 1 samples"):
        natural_split(silos, seed=0)
    with pytest.raises(ProtocolError, match="hold different labels for the same samples .compared by keyed hash"):
        _networked(silos, CONFIG)


def test_a_hub_sees_neither_a_label_nor_the_group_key(monkeypatch):
    # Arrange: remember the group key the dealer draws
    dealt = []
    deal = GroupKeyMember.deal

    def remembering(self, publics):
        key, sealed = deal(self, publics)
        dealt.append(key)
        return key, sealed

    monkeypatch.setattr(GroupKeyMember, "deal", remembering)
    silos = _silos()
    labels = {float(v) for _, clients in silos for c in clients for v in c.y}
    # Act
    run = _networked(silos, CONFIG, record=True)
    # Assert: one key, dealt once; every byte string and array a hub received is free of it and of labels
    assert len(dealt) == 1
    for hub in ("hub0", "hub1"):
        received = [v for m in run.logs[hub] if m.dst == hub for v in m.fields.values()]
        assert not any(isinstance(v, bytes) and dealt[0] in v for v in received)
        assert not any(isinstance(v, np.ndarray) and v.dtype.kind == "f" and labels & set(v.ravel().tolist())
                       for v in received)
        setup = [m for m in run.logs[hub] if m.dst == hub and m.tag.stage == "tdcd-setup" and m.tag.name == "labels"]
        assert {len(m["tag"]) for m in setup} == {16}


@pytest.mark.parametrize("fields", [
    {"role": "steal"},                                                      # no such role
    {"role": "receive", "dealer": "d", "dealer_key": "not bytes", "sealed": b"x" * 48},
    {"role": "deal", "names": ["a"], "blob": b"short"},                     # a public key of 5 bytes
])
def test_a_malformed_group_key_message_from_the_hub_stops_the_client(fields):
    # Arrange: a hub that reads the client's IDs, then answers with a message the client must not trust
    from protocols.codec import Tag
    from securefl.algorithms.tdcd_network import SETUP

    rows = _silos()[0][1][0]

    def hub(transport):
        transport.recv(rows.name, Tag(0, SETUP, "ids"))
        transport.send(rows.name, Tag(0, SETUP, "group"), **fields)

    # Act / Assert
    with pytest.raises(ProtocolError, match="(message of|records from) 'hub' (is|are) malformed"):
        run_parties({"hub": hub, rows.name: client_party}, timeout=10,
                    kwargs={rows.name: {"hub": "hub", "silo": 0, "last": False, "rows": rows, "clients": 1,
                                        "config": CONFIG}})
