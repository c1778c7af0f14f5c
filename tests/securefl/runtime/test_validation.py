"""Shared config field checks: each bad value is one InputError naming the class and field."""

import math

import pytest

from baselines.splitnn import SplitNNConfig
from protocols.errors import InputError
from securefl.algorithms.chfl import CHFLConfig
from securefl.algorithms.gl import GLConfig
from securefl.algorithms.training import TrainConfig
from securefl.runtime import validation as check


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "3", None])
def test_positive_int_rejects_non_positive_or_non_int(value):
    with pytest.raises(InputError, match=r"^Cfg\.epochs must be a positive int, got "):
        check.positive_int("Cfg", "epochs", value)


def test_positive_int_has_a_ceiling_torch_can_index():
    check.positive_int("Cfg", "epochs", check.MAX_COUNT)
    with pytest.raises(InputError, match=r"^Cfg\.epochs must be a positive int \(at most 2147483647\),"
                                         r" got 2147483648$"):
        check.positive_int("Cfg", "epochs", check.MAX_COUNT + 1)


def test_positive_int_optional_takes_none_and_says_so_otherwise():
    check.positive_int("Cfg", "top", None, optional=True)
    with pytest.raises(InputError, match="positive int or None"):
        check.positive_int("Cfg", "top", 0, optional=True)


@pytest.mark.parametrize("value", [0, -1e-3, math.inf, math.nan, False, "0.1", 10**400])
def test_positive_number_rejects(value):
    with pytest.raises(InputError, match=r"^Cfg\.lr must be a positive finite number"):
        check.positive_number("Cfg", "lr", value)


@pytest.mark.parametrize("value", [-1e-3, math.inf, math.nan, True, "0"])
def test_non_negative_number_rejects_and_takes_zero(value):
    check.non_negative_number("Cfg", "l2", 0)
    with pytest.raises(InputError, match=r"^Cfg\.l2 must be a finite number >= 0, got "):
        check.non_negative_number("Cfg", "l2", value)


def test_number_in_closed_and_open_bounds():
    check.number_in("Cfg", "eta", 0.0, 0.0, 1.0)
    check.number_in("Cfg", "eta", 1, 0.0, 1.0)
    with pytest.raises(InputError, match=r"in \(0.0, 1.0\]"):
        check.number_in("Cfg", "lr", 0.0, 0.0, 1.0, open_low=True)
    with pytest.raises(InputError, match=r"in \[0.0, 1.0\]"):
        check.number_in("Cfg", "eta", 1.01, 0.0, 1.0)


def test_seed_device_flag_and_callback():
    check.seed("Cfg", 2**63 - 1)
    check.device("Cfg", "cuda:1")
    check.flag("Cfg", "secure", False)
    check.callback("Cfg", "progress", None)
    for call in (lambda: check.seed("Cfg", 2**63), lambda: check.seed("Cfg", -1),
                 lambda: check.device("Cfg", "tpu"), lambda: check.flag("Cfg", "secure", 1),
                 lambda: check.callback("Cfg", "progress", 3)):
        with pytest.raises(InputError, match=r"^Cfg\."):
            call()


@pytest.mark.parametrize("make", [
    lambda: GLConfig(epochs=0),
    lambda: CHFLConfig(device="gpu"),
    lambda: TrainConfig(lr=0),
    lambda: SplitNNConfig(top=0),
])
def test_every_config_uses_the_shared_checks(make):
    with pytest.raises(InputError, match=r"^(GL|CHFL|Train|SplitNN)Config\.\w+ must be"):
        make()
