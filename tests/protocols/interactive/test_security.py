"""What each party of the interactive layer receives, read from the transport's log."""

from __future__ import annotations

import json
from typing import Any, Iterator

import numpy as np
import tenseal as ts

from protocols.codec import Message
from protocols.he import load_public_context
from protocols.he.ckks import MAGIC as CKKS_MAGIC
from protocols.he.paillier import MAGIC as PAILLIER_MAGIC

from .conftest import CONFIGS, make_batches, reference, run_layer


def _values(message: Message) -> Iterator[tuple[str, Any]]:
    yield from message.fields.items()


def _run(scheme: str, seed: int = 7) -> tuple[Any, list, np.ndarray]:
    rng = np.random.default_rng(seed)
    batches = make_batches(rng, n_in=5, n_out=3, rows=[6, 4], train=[True, False])
    w0 = rng.normal(size=(5, 3))
    return run_layer(CONFIGS[scheme], batches, w0, record=True), batches, w0


def test_only_a_public_context_crosses(scheme: str) -> None:
    run, _, _ = _run(scheme)
    hello = next(m for m in run.logs["active"] if m.tag.name == "hello")
    data = hello["context"]

    if CONFIGS[scheme].he == "ckks":
        header = int.from_bytes(data[len(CKKS_MAGIC):len(CKKS_MAGIC) + 4], "little")
        body = data[len(CKKS_MAGIC) + 4 + header:]
        context = ts.context_from(body)
        assert not context.is_private() and not context.has_secret_key()
    else:
        fields = json.loads(data[len(PAILLIER_MAGIC):])
        assert set(fields) == {"key_bits", "precision_bits", "slot_bits", "max_abs", "pack", "n", "hs"}
    public = load_public_context(CONFIGS[scheme].he, data, insecure_small_keys_for_tests=True)
    assert type(public).__name__.endswith("PublicContext")


def test_the_passive_party_receives_no_plaintext_numbers(scheme: str) -> None:
    run, _, _ = _run(scheme)

    names = set()
    for message in run.logs["passive"]:
        names.add(message.tag.name)
        for name, value in _values(message):
            public = (message.tag.name, name) == ("ready", "init_bound")  # 1/sqrt(fan_in), a width
            assert public or not isinstance(value, float), (message.tag, name)
            if isinstance(value, np.ndarray):
                assert value.dtype.kind in "iub", (message.tag, name, value.dtype)
    assert names == {"ready", "z_masked", "g_masked", "da"}


def test_the_active_party_sees_activations_only_encrypted_or_masked(scheme: str) -> None:
    run, batches, w0 = _run(scheme)
    z, _, _ = reference(batches, w0, CONFIGS[scheme].lr)

    seen_floats = []
    for message in run.logs["active"]:
        for name, value in _values(message):
            if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                seen_floats.append((message.tag, value))
            assert not (isinstance(value, np.ndarray) and value.shape == batches[0].a.shape)
    for tag, values in seen_floats:  # masked replies (CKKS; Paillier's are fixed-point bytes), masked W
        assert tag.name in ("z_reply", "g_reply", "init")
        if tag.name == "z_reply":
            assert np.min(np.abs(values - z[tag.round - 1])) > 1e-3
    if CONFIGS[scheme].he == "paillier":
        assert [tag.name for tag, _ in seen_floats] == ["init"]
    assert {m.tag.name for m in run.logs["active"]} == {"hello", "init", "x", "x_back", "z_reply", "g_reply"}


def test_the_active_party_never_holds_the_initial_weights(scheme: str) -> None:
    # Arrange / Act: the passive party draws W0; the active party gets only the "init" message
    run, _, w0 = _run(scheme)
    init = next(m for m in run.logs["active"] if m.tag.name == "init")["weight"]
    noise = run.results["passive"]["initial_noise"]
    # Assert: what arrived is W0 under the passive party's fresh noise, far from W0 everywhere it matters
    assert np.allclose(init - noise, w0, atol=1e-12, rtol=0)
    assert np.median(np.abs(init - w0)) > 0.1 and np.allclose(run.results["active"]["initial_masked_weight"], init)
