"""The mask PRG: deterministic per seed, equal to the cipher's keystream, fast enough."""

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from protocols.channels import prg
from protocols.errors import InputError

SEED = bytes(range(32))


def _reference_keystream(seed: bytes, nbytes: int, name: str) -> bytes:
    if name == "aes128-ctr":
        cipher = Cipher(algorithms.AES(seed[:16]), modes.CTR(bytes(16)))
    else:
        cipher = Cipher(algorithms.ChaCha20(seed, bytes(16)), mode=None)
    return cipher.encryptor().update(bytes(nbytes))


@pytest.mark.parametrize("name", prg.PRGS)
def test_expand_is_the_cipher_keystream_as_little_endian_words(name):
    words = prg.expand(SEED, 1001, name)

    expected = np.frombuffer(_reference_keystream(SEED, 8 * 1001, name), dtype="<u8")
    assert words.dtype == np.uint64 and words.shape == (1001,)
    np.testing.assert_array_equal(words, expected)


def test_aes128_ctr_known_answer():
    # AES-128(key = 00..0f, block = 0^128), i.e. the first CTR keystream block for counter 0
    first = prg.keystream(SEED, 16, "aes128-ctr")

    assert first.hex() == "c6a13b37878f5b826f4f8162a1c8d879"


@pytest.mark.parametrize("name", prg.PRGS)
def test_same_seed_same_mask_other_seed_other_mask(name):
    other = bytes([1]) + SEED[1:]

    a, b, c = prg.expand(SEED, 512, name), prg.expand(SEED, 512, name), prg.expand(other, 512, name)

    np.testing.assert_array_equal(a, b)
    assert np.count_nonzero(a == c) < 5


def test_prgs_differ_and_look_uniform():
    aes, chacha = prg.expand(SEED, 4096, "aes128-ctr"), prg.expand(SEED, 4096, "chacha20")

    assert not np.array_equal(aes, chacha)
    bits = np.unpackbits(aes.view(np.uint8))
    assert 0.48 < bits.mean() < 0.52


def test_prefix_property_and_empty_mask():
    assert prg.expand(SEED, 0).shape == (0,)
    np.testing.assert_array_equal(prg.expand(SEED, 10), prg.expand(SEED, 100)[:10])


def test_add_mask_then_subtract_restores_the_vector():
    acc = np.arange(100, dtype=np.uint64)

    prg.add_mask(acc, SEED, sign=1)
    changed = acc.copy()
    prg.add_mask(acc, SEED, sign=-1)

    assert not np.array_equal(changed, np.arange(100, dtype=np.uint64))
    np.testing.assert_array_equal(acc, np.arange(100, dtype=np.uint64))


@pytest.mark.parametrize("call", [
    lambda: prg.expand(b"short", 4),
    lambda: prg.expand(SEED, -1),
    lambda: prg.expand(SEED, 4, "rc4"),
    lambda: prg.add_mask(np.zeros(4, np.int64), SEED),
    lambda: prg.add_mask(np.zeros(4, np.uint64), SEED, sign=2),
])
def test_bad_arguments_are_input_errors(call):
    with pytest.raises(InputError):
        call()


@pytest.mark.parametrize("call", [lambda: prg.expand(SEED, True), lambda: prg.keystream(SEED, True)],
                         ids=["expand", "keystream"])
def test_a_bool_length_is_an_input_error_naming_it(call):
    # Arrange: True is an int to isinstance, and once passed as one word of mask
    # Act / Assert
    with pytest.raises(InputError, match="length"):
        call()


@pytest.mark.parametrize("chunk_words", [1, 7, 64, 10_000])
def test_chunked_accumulator_adds_exactly_the_expanded_mask(chunk_words):
    start = np.arange(100, dtype=np.uint64) * np.uint64(2**60)
    acc = start.copy()

    masks = prg.MaskAccumulator(acc, "chacha20", chunk_words=chunk_words)
    masks.add(SEED, 1)
    masks.add(bytes(32), -1)

    expected = start + prg.expand(SEED, 100, "chacha20") - prg.expand(bytes(32), 100, "chacha20")
    np.testing.assert_array_equal(acc, expected)
