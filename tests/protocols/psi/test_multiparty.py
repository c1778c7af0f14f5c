"""Multi-party PSI: one active party and several passive parties end in one order."""

import random

import pytest

from protocols.errors import InputError
from protocols.psi import psi_active, psi_passive
from protocols.transport import run_parties

PASSIVE = ("p1", "p2", "p3")


def _run(sets: dict[str, list[str]], **kw):
    roles = {"active": psi_active, **{p: psi_passive for p in PASSIVE}}
    kwargs = {"active": {"passive": list(PASSIVE), "ids": sets["active"], **kw},
              **{p: {"active": "active", "ids": sets[p], **kw} for p in PASSIVE}}
    return run_parties(roles, kwargs=kwargs, record=True)


def _sets(seed: int, common: int) -> dict[str, list[str]]:
    rng = random.Random(seed)
    shared = [f"c{i}" for i in range(common)]
    sets = {}
    for k, name in enumerate(("active", *PASSIVE)):  # each "pair-" ID misses one set
        own = [f"{name}-{i}" for i in range(rng.randint(0, 80))]
        ids = shared + own + [f"pair-{i}" for i in range(40) if i % 4 != k]
        rng.shuffle(ids)
        sets[name] = ids
    return sets


@pytest.mark.parametrize("common", [0, 1, 57])
def test_every_party_gets_the_common_intersection_in_one_order(common):
    sets = _sets(common, common)
    truth = set.intersection(*(set(v) for v in sets.values()))
    assert len(truth) == common

    run = _run(sets)

    active = run.results["active"]
    assert set(active.ids) == truth and active.size == len(truth)
    for name, ids in sets.items():
        result = run.results[name]
        assert result.ids == active.ids  # same order everywhere
        assert [ids[i] for i in result.indices] == result.ids
    assert active.peer_sizes == {p: len(sets[p]) for p in PASSIVE}


def test_passive_party_learns_only_the_common_intersection():
    common = [f"c{i}" for i in range(10)]
    sets = {p: common + [f"{p}-with-active-{i}" for i in range(15)] + [f"{p}-alone"] for p in PASSIVE}
    sets["active"] = common + [f"{p}-with-active-{i}" for p in PASSIVE for i in range(15)]

    run = _run(sets)

    for name in PASSIVE:
        received = {str(m.tag): m for m in run.logs[name]}
        assert sorted(received) == ["r0/psi/rows", "r0/psi/singles"]
        assert received["r0/psi/singles"]["points"].shape == (len(sets["active"]), 32)
        assert received["r0/psi/rows"]["rows"].shape == (10,)  # not its larger pairwise intersection


@pytest.mark.parametrize("passive", [[], ["active"], ["p1", "p1"]])
def test_bad_passive_list_is_an_input_error(passive):
    with pytest.raises(InputError, match="passive"):
        run_parties({"active": psi_active, "p1": psi_passive},
                    kwargs={"active": {"passive": passive, "ids": ["a"]},
                            "p1": {"active": "active", "ids": ["a"]}}, timeout=5)
