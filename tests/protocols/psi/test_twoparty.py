"""Two-party PSI: agrees with Python's set intersection, in one order at both parties."""

import random
import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.errors import DuplicateIDError, InputError
from protocols.psi import Blinder, check_ids, intersect, make_pool, psi_two_party
from protocols.transport import run_parties


def _random_ids(rng: random.Random, n: int) -> list[str]:
    return list({"".join(rng.choices(string.ascii_letters + string.digits, k=rng.randint(1, 12)))
                 for _ in range(n)})


def _assert_agrees(left_ids, right_ids, left, right):
    truth = set(left_ids) & set(right_ids)
    assert left.size == right.size == len(truth)
    assert set(left.ids) == truth
    assert left.ids == right.ids  # one agreed order
    assert [left_ids[i] for i in left.indices] == left.ids
    assert [right_ids[i] for i in right.indices] == right.ids


def test_random_ids_match_set_intersection():
    rng = random.Random(7)
    pool = _random_ids(rng, 1500)
    left_ids, right_ids = pool[:900], pool[500:]
    rng.shuffle(right_ids)

    left, right, run = intersect(left_ids, right_ids)

    _assert_agrees(left_ids, right_ids, left, right)
    assert left.peer_sizes == {"right": len(right_ids)} and run.bytes > 0


ADVERSARIAL = {
    "unicode": (["\u00e9", "e\u0301", "👍", "👍🏽", "👨\u200d👩\u200d👧", "ß", "SS", "\u2126", "\u03a9"],
                ["e\u0301", "👍🏽", "👨\u200d👩\u200d👧", "ss", "\u03a9", "👍\u200b"]),
    "whitespace": ([" a", "a ", "a", "a\t", "\u00a0a", ""], ["a", " a ", "a\n", "", "\u00a0a"]),
    "numeric-looking": (["1", "01", "1.0", "1e0", "-0", "0"], ["1", "001", "1.00", "+0", "0"]),
    "case": (["abc", "ABC"], ["Abc", "abc"]),
    "one element": (["x"], ["x"]),
    "one side empty": ([], ["a", "b"]),
    "both empty": ([], []),
    "disjoint": (["a", "b", "c"], ["d", "e"]),
    "identical": (["p", "q", "r", "s"], ["s", "r", "q", "p"]),
    "nul and controls": (["a\x00", "a", "\x00", "\x7f"], ["a\x00", "\x00\x00", "\x7f"]),
}


@pytest.mark.parametrize("case", ADVERSARIAL, ids=list(ADVERSARIAL))
def test_adversarial_ids_are_compared_as_exact_strings(case):
    left_ids, right_ids = ADVERSARIAL[case]

    left, right, _ = intersect(left_ids, right_ids)

    _assert_agrees(left_ids, right_ids, left, right)


@settings(max_examples=15, deadline=None)
@given(st.sets(st.text(max_size=4), max_size=12), st.sets(st.text(max_size=4), max_size=12))
def test_property_matches_set_intersection(left_set, right_set):
    left_ids, right_ids = sorted(left_set), sorted(right_set, reverse=True)

    left, right, _ = intersect(left_ids, right_ids, workers=0)

    _assert_agrees(left_ids, right_ids, left, right)


def test_process_pool_path_agrees_with_inline_and_keeps_order():
    ids = [f"id-{i}" for i in range(3000)]
    pool = make_pool(2)
    try:
        with Blinder(executor=pool) as blinder:  # a given executor is used for every size
            parallel = blinder.hash_and_blind(ids)
            twin = _inline(blinder)
            inline = np.concatenate([twin.hash_and_blind(ids[i:i + 700]) for i in range(0, 3000, 700)])
        result = run_parties({"a": psi_two_party, "b": psi_two_party}, kwargs={
            "a": {"peer": "b", "ids": ids, "executor": pool},
            "b": {"peer": "a", "ids": ids[1000:] + ["z"], "executor": pool}})
    finally:
        pool.shutdown()

    assert parallel.shape == (3000, 32) and np.array_equal(parallel, inline)
    _assert_agrees(ids, ids[1000:] + ["z"], result.results["a"], result.results["b"])


def _inline(blinder: Blinder) -> Blinder:
    """The same scalar, blinding in this thread."""
    twin = Blinder(workers=0)
    twin._scalar = blinder._scalar
    return twin


def test_result_is_immutable():
    left, _, _ = intersect(["a", "b"], ["b"])

    with pytest.raises(ValueError):
        left.indices[0] = 1
    with pytest.raises(AttributeError):
        left.size = 3


@pytest.mark.parametrize("ids, count", [(["a", "b", "a"], 1), (["a", "b", "a", "b", "c", "a"], 3)])
def test_duplicates_are_reported_with_their_count(ids, count):
    with pytest.raises(DuplicateIDError) as err:
        check_ids(ids, source="left.csv column 'id'")

    message = str(err.value)
    assert f"{count} duplicate ID" in message and "left.csv column 'id'" in message and "'a'" in message


def test_duplicates_stop_the_protocol():
    with pytest.raises(DuplicateIDError, match="1 duplicate ID"):
        intersect(["a", "a"], ["a"])


@pytest.mark.parametrize("ids", [["a", 1], ["a", None], [b"a"], ["a", 1.0], "abc", b"abc", 5,
                                 ["ok", "\ud800"]])
def test_non_str_ids_are_input_errors(ids):
    with pytest.raises(InputError, match="src"):
        check_ids(ids, source="src")


@pytest.mark.parametrize("left, message", [
    (None, "left_ids: IDs must be a sequence of str, got NoneType"),
    ("abc", "left_ids: IDs must be a sequence of str, got a single str"),
])
def test_intersect_names_a_bad_id_argument(left, message):
    with pytest.raises(InputError, match=message):
        intersect(left, ["a"], workers=0)


def test_intersect_takes_any_iterable_of_ids_as_psi_two_party_does():
    left, right, _ = intersect((str(i) for i in range(5)), iter(["3", "9"]), workers=0)
    assert left.ids == right.ids == ["3"]


def test_str_subclasses_become_plain_str():
    ids = check_ids(np.array(["a", "b"]), source="x")

    assert ids == ["a", "b"] and all(type(i) is str for i in ids)


@pytest.mark.parametrize("workers", [-1, 1025, 2**40, True, 2.0])
def test_bad_workers_is_an_input_error(workers):
    with pytest.raises(InputError, match=r"workers must be an int in 0\.\.1024 or None"):
        intersect(["a"], ["a"], workers=workers)


def test_he_threads_take_the_same_bounds_and_treat_zero_as_one():
    from protocols.he.parallel import resolve_workers

    assert resolve_workers(0) == 1 and resolve_workers(1024) == 1024
    with pytest.raises(InputError, match=r"workers must be an int in 0\.\.1024 or None, got 2147483647"):
        resolve_workers(2**31 - 1)
