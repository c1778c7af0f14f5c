"""What HE-VFL's key owner (its passive party) can read beyond dL/da with packed CKKS.

The key owner holds the secret key and the public context. It decrypts whole
polynomials, not only the slots it is meant to read, and it can run the evaluator's
product itself on its own ciphertexts. Measured here, on what the evaluator sends:

- **low bits:** the share of decrypted coefficients whose part added by the evaluator
  (mask or clear term; the product itself, decrypted from the evaluator's
  ciphertexts, taken off) lies within 2^(L-7) of a multiple of 2^L. Uniform bits: 1/64.
  A term encoded from doubles would leave its low bits at zero, to the exact product.
- **padding attack:** least squares over the lanes the key owner does not read of the
  input gradient Enc(eps_acc @ -dz.T + clear), fitted with its own runs of the product
  for a basis of M = -dz.T: the relative error of the dz it recovers (about 1: nothing).
- **read-lane attack:** on the lanes it reads, O = W dz.T + err(dz): rank-n factors of
  O leave dz up to an n x n gauge, fitted with the error its own runs predict. Also
  the same fit on an O whose error is exactly the predicted one, which it recovers.
- **rotation noise:** with M and the clear term known (as only a measurement can), the
  median gap between what the key owner decrypts and its own run of the product; 0
  would mean it can compute the rotation noise that M multiplies.

Shapes are (rows, contraction, outputs) of one product. The tests in
``tests/protocols/interactive/test_ckks_flood.py`` assert on the same functions.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Callable, Sequence

import numpy as np
from tenseal import sealapi

from benchmarks.common import markdown_table
from protocols.interactive.ckks_engine import PackedCKKSKey, PackedKeyOwner, SealHandles
from protocols.interactive.ckks_evaluator import PackedEvaluator
from protocols.interactive.ckks_helper import input_grad_fields
from protocols.interactive.packing import Plan, make_plan, read_lanes
from protocols.interactive.sealwire import ciphertexts_from_fields

Parties = tuple[PackedCKKSKey, PackedKeyOwner, PackedEvaluator]


def parties() -> Parties:
    """A fresh key owner and an evaluator holding its public context."""
    key = PackedCKKSKey.generate_packed()
    return key, PackedKeyOwner(key), PackedEvaluator(key.public_context())


def coefficients(seal: SealHandles, plain: Any) -> list[int]:
    """Signed coefficients of an NTT-form plaintext at the top level, by SEAL's own inverse NTT.

    Adding the plaintext to an encryption of zero and taking both out of NTT form leaves
    the plaintext's residues as their difference in the first polynomial.
    """
    base, summed = seal.zero(), sealapi.Ciphertext()
    plain.scale = base.scale
    seal.evaluator.add_plain(base, plain, summed)
    for ct in (base, summed):
        seal.evaluator.transform_from_ntt_inplace(ct)
    n = base.poly_modulus_degree()
    primes = [p.value() for p in seal.context.get_context_data(base.parms_id()).parms().coeff_modulus()]
    modulus = math.prod(primes)
    a, b = summed.dyn_array(), base.dyn_array()
    out = [0] * n
    for i, p in enumerate(primes):
        lift = (modulus // p) * pow(modulus // p, -1, p)
        for j in range(n):
            out[j] += (a[i * n + j] - b[i * n + j]) % p * lift
    return [c % modulus - modulus if c % modulus > modulus // 2 else c % modulus for c in out]


def added(parties: Parties, fields: dict, outs: list, n: int) -> list[int]:
    """Coefficients of (decrypted output - decrypted product): the evaluator's additions."""
    key, owner, _ = parties
    _, _, _, decryptor = key._sealapi()
    body = {k: v for k, v in fields.items() if k != "unscale_bits"}
    out: list[int] = []
    for sent, product in zip(ciphertexts_from_fields(owner.seal.public, body, n), outs):
        plains = [sealapi.Plaintext(), sealapi.Plaintext()]
        decryptor.decrypt(sent, plains[0])
        decryptor.decrypt(product, plains[1])
        mine, theirs = (coefficients(owner.seal, p) for p in plains)
        out += [a - b for a, b in zip(mine, theirs)]
    return out


def near_zero(values: list[int], bits: int) -> float:
    """Share of values within 2^(bits - 7) of a multiple of 2^bits (uniform: 1/64)."""
    m = 1 << bits
    return float(np.mean([abs((c + m // 2) % m - m // 2) < m >> 7 for c in values]))


def product(parties: Parties, shape: tuple[int, int, int], seed: int) -> tuple[Plan, np.ndarray, np.ndarray, list, int]:
    """Enc(X) @ M through the evaluator, X and M random: plan, X, M, the output ciphertexts, k."""
    _, owner, evaluator = parties
    rows, n_in, n_out = shape
    rng = np.random.default_rng(seed)
    x, w = rng.uniform(-1, 1, (rows, n_in)), rng.normal(0, 0.1, (n_in, n_out))
    plan = make_plan(evaluator.seal.slots, rows, n_in, n_out)
    outs, exponent = evaluator.product(evaluator.load(owner.encrypt(x, plan, 1.0), plan), w, plan)
    return plan, x, w, outs, exponent


def low_bits(parties: Parties, shape: tuple[int, int, int], seed: int, *, masked: bool,
             bits: Sequence[int]) -> dict[int, float]:
    """:func:`near_zero` of a masked (or revealed, with a random clear term) product's additions."""
    plan, _, _, outs, exponent = product(parties, shape, seed)
    evaluator = parties[2]
    if masked:
        fields = evaluator.masked(outs, plan, exponent, 1.0)[0]
    else:
        clear = np.random.default_rng(seed + 1).normal(0, 1, (shape[0], shape[2]))
        fields = evaluator.revealed(outs, plan, exponent, 1.0, clear)
    values = added(parties, fields, outs, plan.n_outputs)
    return {b: near_zero(values, b) for b in bits}


class KeyOwnerProbe:
    """The key owner attacking a revealed product X @ M + clear (the input gradient: X its own
    noise, M = -dz.T the active party's): it runs the product itself on its own ciphertexts
    (it holds the public context) for a basis of M, and fits what it decrypted."""

    def __init__(self, parties: Parties, shape: tuple[int, int, int], seed: int) -> None:
        self.key, self.owner, self.evaluator = parties
        self.mine = PackedEvaluator(self.key.public_context())
        rows, n, outputs = shape
        self.rng = np.random.default_rng(seed)
        self.plan = make_plan(self.evaluator.seal.slots, rows, n, outputs)
        self.x = self.rng.uniform(-1, 1, (rows, n))
        self.fields = self.owner.encrypt(self.x, self.plan, 1.0)
        self.m_shape, self.clear_shape = (n, outputs), (rows, outputs)

    def lanes(self, party: PackedEvaluator, m: np.ndarray, clear: np.ndarray) -> tuple[dict, np.ndarray]:
        """The sent fields and every lane the key owner can decode from them."""
        outs, k = party.product(party.load(self.fields, self.plan), m, self.plan)
        sent = party.revealed(outs, self.plan, k, 1.0, clear)
        body = {name: value for name, value in sent.items() if name != "unscale_bits"}
        cts = ciphertexts_from_fields(self.owner.seal.public, body, self.plan.n_outputs)
        return sent, self.key.decrypt_slots(cts) * 2.0 ** sent["unscale_bits"]

    def basis(self, read: Callable[[PackedEvaluator, np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        """Columns ``read(M = e_i) - read(M = 0)`` from the key owner's own runs: the linear map M -> read."""
        zero_m, zero_clear = np.zeros(self.m_shape), np.zeros(self.clear_shape)
        origin = read(self.mine, zero_m, zero_clear)
        units = np.eye(zero_m.size).reshape(-1, *self.m_shape)
        return np.array([read(self.mine, unit, zero_clear) - origin for unit in units]).T


def _relative(found: np.ndarray, true: np.ndarray) -> float:
    return float(np.linalg.norm(found - true) / np.linalg.norm(true))


def padding_attack(parties: Parties, shape: tuple[int, int, int], seed: int) -> dict[str, float]:
    """Least squares for M over the unread lanes: the recovered M's relative error, and those lanes' median size."""
    probe = KeyOwnerProbe(parties, shape, seed)
    read = read_lanes(probe.plan)
    unread = np.concatenate([(read.real == 0).ravel(), (read.imag == 0).ravel()])

    def padding(party: PackedEvaluator, m: np.ndarray, clear: np.ndarray) -> np.ndarray:
        lanes = probe.lanes(party, m, clear)[1]
        return np.concatenate([lanes.real.ravel(), lanes.imag.ravel()])[unread]

    secret = probe.rng.normal(0, 0.3, probe.m_shape)
    seen = padding(probe.evaluator, secret, probe.rng.normal(0, 1, probe.clear_shape))
    origin = padding(probe.mine, np.zeros(probe.m_shape), np.zeros(probe.clear_shape))
    solved = np.linalg.lstsq(probe.basis(padding), seen - origin, rcond=None)[0].reshape(probe.m_shape)
    return {"dz_error": _relative(solved, secret), "padding_median": float(np.median(np.abs(seen)))}


def read_lane_attack(parties: Parties, shape: tuple[int, int, int], seed: int) -> dict[str, float]:
    """The gauge fit on the read lanes: dz's relative error, and the same fit's where err is the predicted one."""
    probe = KeyOwnerProbe(parties, shape, seed)
    rows, n = probe.x.shape
    dz, w = probe.rng.normal(0, 0.3, (shape[2], n)), probe.rng.normal(0, 0.3, (rows, n))

    def reads(party: PackedEvaluator, m: np.ndarray, clear: np.ndarray) -> np.ndarray:
        sent = probe.lanes(party, m, clear)[0]
        return (probe.owner.decrypt(sent, probe.plan) - probe.x @ m - clear).ravel()  # err(M), as it knows X

    observed = probe.owner.decrypt(probe.lanes(probe.evaluator, -dz.T, (w + probe.x) @ dz.T)[0], probe.plan)
    err_of = probe.basis(reads)  # the key owner's prediction of err(M), from its own runs

    def recover(o: np.ndarray) -> np.ndarray:
        """Rank-n factors of o, then the gauge A from the part outside them."""
        u, sv, vt = np.linalg.svd(o)
        dz0 = vt[:n].T * np.sqrt(sv[:n])
        left, right = np.eye(rows) - u[:, :n] @ u[:, :n].T, np.eye(dz.shape[0]) - vt[:n].T @ vt[:n]
        outside = lambda v: (left @ v.reshape(rows, -1) @ right).ravel()  # noqa: E731
        fit = np.array([outside(err_of @ (-(dz0 @ a).T).ravel()) for a in np.eye(n * n).reshape(-1, n, n)]).T
        return dz0 @ np.linalg.lstsq(fit, outside(o), rcond=None)[0].reshape(n, n)

    predictable = w @ dz.T + (err_of @ (-dz.T).ravel()).reshape(rows, -1)
    return {"dz_error": _relative(recover(observed), dz),
            "dz_error_if_predictable": _relative(recover(predictable), dz)}


def rotation_noise(parties: Parties, shape: tuple[int, int, int], seed: int) -> dict[str, float]:
    """Median |what the key owner decrypts - its own run of the same input gradient|, M and clear term known."""
    key, owner, evaluator = parties
    mine = PackedEvaluator(key.public_context())
    rows, n, outputs = shape
    rng = np.random.default_rng(seed)
    plan = make_plan(evaluator.seal.slots, rows, n, outputs)
    x = rng.uniform(-1, 1, (rows, n))
    noise = owner.encrypt(x, plan, 1.0)
    dz, w = rng.normal(0, 0.3, (outputs, n)), rng.normal(0, 0.3, (rows, n))
    theirs = owner.decrypt(input_grad_fields(evaluator, noise, dz, w), plan)
    outs, k = mine.product(mine.load(noise, plan), -dz.T, plan)
    own = owner.decrypt(mine.revealed(outs, plan, k, 1.0, (dz @ w.T).T), plan)
    return {"median_gap": float(np.median(np.abs(theirs - own))),
            "max_error": float(np.max(np.abs(theirs - (w - x) @ dz.T)))}


CHECKS: dict[str, tuple[Callable[..., dict], list[tuple[int, int, int]]]] = {
    "low bits, masked (L = 16, 32, 48)": (lambda p, s, seed: low_bits(p, s, seed, masked=True, bits=(16, 32, 48)),
                                          [(128, 100, 50), (128, 25, 25)]),
    "low bits, input gradient (L = 16, 24)": (lambda p, s, seed: low_bits(p, s, seed, masked=False, bits=(16, 24)),
                                              [(100, 50, 128), (25, 25, 128)]),
    "padding attack": (padding_attack, [(6, 4, 8), (20, 10, 32)]),
    "read-lane attack": (read_lane_attack, [(8, 2, 12), (24, 3, 40)]),
    "rotation noise": (rotation_noise, [(6, 4, 8), (100, 50, 128)]),
}


def key_owner_views(seeds: int, *, quick: bool = False) -> list[dict[str, Any]]:
    """Every check at its shapes (quick: the first shape only), over ``seeds`` seeds, with a fresh key each."""
    rows = []
    for check, (measure, shapes) in CHECKS.items():
        for shape in shapes[:1] if quick else shapes:
            runs = [measure(parties(), shape, seed) for seed in range(seeds)]
            stats = {str(k): [statistics.fmean(float(r[k]) for r in runs), max(float(r[k]) for r in runs),
                              min(float(r[k]) for r in runs)] for k in runs[0]}
            rows.append({"check": check, "shape": list(shape), "seeds": seeds, "stats": stats})
    return rows


def key_owner_section(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The Markdown of :func:`key_owner_views` (absent from results written before it was measured)."""
    if not rows:
        return []
    body = [[r["check"], " x ".join(map(str, r["shape"])), r["seeds"],
             "; ".join(f"{k}: {v[0]:.3g} (min {v[2]:.3g}, max {v[1]:.3g})" for k, v in r["stats"].items())]
            for r in rows]
    return ["", "## HE-VFL's key owner: what it can read beyond dL/da (packed CKKS)", "",
            "The passive party holds the CKKS secret key: it decrypts whole polynomials, decodes every slot and"
            " can run the evaluator's product itself on its own ciphertexts. Low bits: the share of the"
            " coefficients the evaluator added within 2^(L-7) of a multiple of 2^L (uniform: 0.0156). Padding"
            " attack: least squares for the active party's dz over the lanes of Enc(dL/da) the passive party"
            " does not read, fitted with its own runs (dz_error about 1: nothing recovered; the padding holds"
            " guards of the result's size). Read-lane attack: rank-n factors of what it reads, then the gauge"
            " fitted with the error its own runs predict; the same fit recovers dz where that error is exactly"
            " the predicted one (dz_error_if_predictable). Rotation noise: the median gap between what it"
            " decrypts and its own run with M and the clear term known, which would be ~1e-15 if it could"
            " compute the rotation noise that M multiplies. A shape is (rows, contraction, outputs); seeds draw"
            " fresh keys and data (`benchmarks/key_owner.py`).", "",
            markdown_table(["check", "shape", "seeds", "mean (min, max) over seeds"], body)]
