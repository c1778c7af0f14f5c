"""HE benchmark: our Paillier and CKKS against the plain ``phe`` per-value loop.

    python -m benchmarks.he [--quick] [--workers N] [--repeats R] --json FILE [--markdown FILE]

Shapes follow the STFL interactive layer: X of shape (batch, d_in) = (128, 20) is
encrypted, decrypted, added to itself, multiplied by a plain row of d_in weights,
and multiplied by a plain (d_in, d_out) = (20, 100) matrix. Rates are *values per
second*: scalar values processed (batch * d_in; for matmul the batch * d_out
outputs, each a 20-term dot product). Parameters are secure only: 2048-bit Paillier
(insecure sizes are refused), CKKS N = 8192 with [60, 40, 40, 60] at scale 2^40.
``phe`` (python-paillier, the same 2048-bit size) is timed on ``phe_samples`` values
per operation with its usual per-value API and its rate extrapolated; both are the
best of ``repeats`` runs (phe's on its samples, ours on the full shape). One-off costs (key generation, the
DJN fixed-base table) are reported separately. ``--quick`` shrinks the shapes.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import phe
import tenseal as ts

from benchmarks.common import (count_option, markdown_header, markdown_table, named_report, run_main, writable,
                               write_json, write_text)
from protocols.errors import InputError
from protocols.he import EncryptedArray, SecretContext, make_he
from securefl.commands import plain_text
from securefl.runtime import validation as check

OPS = ("encrypt", "decrypt", "add", "multiply", "matmul")


@dataclass(frozen=True)
class Config:
    """What one benchmark run measures."""

    quick: bool
    json_path: Path
    markdown_path: Path
    batch: int = 128
    d_in: int = 20
    d_out: int = 100
    paillier_key_bits: int = 2048
    ckks_poly_modulus_degree: int = 8192
    phe_samples: int = 24
    repeats: int = 3
    workers: int | None = None

    def __post_init__(self) -> None:
        if self.paillier_key_bits < 2048:
            raise InputError(f"the benchmark refuses insecure Paillier keys ({self.paillier_key_bits} bits)")
        if self.ckks_poly_modulus_degree < 8192:
            raise InputError("the benchmark needs CKKS poly_modulus_degree >= 8192 for [60, 40, 40, 60]")
        for name in ("batch", "d_in", "d_out", "phe_samples", "repeats"):
            check.positive_int("benchmarks.he.Config", name, getattr(self, name))

    def settings(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("json_path"), out.pop("markdown_path")
        return out


def parse_args(argv: Sequence[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.he", description=plain_text(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="batch 32, d_in 8, d_out 16; labelled quick")
    parser.add_argument("--workers", type=count_option, default=None, help="threads (default: all cores)")
    parser.add_argument("--repeats", type=count_option, default=3, help="timed runs per operation (best kept)")
    parser.add_argument("--key-bits", type=count_option, default=2048, help="Paillier modulus bits (>= 2048)")
    parser.add_argument("--json", type=Path, required=True, help="write the results here")
    parser.add_argument("--markdown", type=Path, default=None,
                        help="write the Markdown table here (default: --json with .md, so a scratch run "
                             "never overwrites benchmarks/results/he.md)")
    args = parser.parse_args(argv)
    args.markdown = args.markdown or args.json.with_suffix(".md")
    writable(parser, json=args.json, markdown=args.markdown)
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be at least 1, got {args.workers}")
    shape = {"batch": 32, "d_in": 8, "d_out": 16, "phe_samples": 8} if args.quick else {}
    try:
        return Config(quick=args.quick, json_path=args.json, markdown_path=args.markdown,
                      paillier_key_bits=args.key_bits, repeats=args.repeats, workers=args.workers,
                      **shape)
    except InputError as exc:
        parser.error(str(exc))
        raise  # unreachable: parser.error exits


def _best(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Best wall time of ``repeats`` calls, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def _row(op: str, values: int, seconds: float, **extra: Any) -> dict[str, Any]:
    return {"op": op, "values": values, "seconds": seconds, "values_per_s": values / seconds, **extra}


def bench_ours(name: str, config: Config, secret: SecretContext, data: dict[str, np.ndarray]) -> list[dict]:
    """Full-shape timings of one backend (the public context does all but decrypt)."""
    public, reps = secret.public_context(), config.repeats
    x, row, w = data["x"], data["row"], data["w"]
    public.encrypt(x[:1])  # builds one-off tables (timed separately)
    t_enc, enc = _best(lambda: public.encrypt(x), reps)
    t_dec, _ = _best(lambda: secret.decrypt(enc), reps)
    t_add, _ = _best(lambda: enc + enc, reps)
    t_mul, _ = _best(lambda: enc * row, reps)
    t_mm, out = _best(lambda: enc @ w, reps)
    error = float(np.max(np.abs(secret.decrypt(out) - x @ w)))
    n_in, n_out = x.size, out.size
    wire = {"bytes_x": _nbytes(enc), "bytes_xw": _nbytes(out)}
    return [_row("encrypt", n_in, t_enc, backend=name, **wire), _row("decrypt", n_in, t_dec, backend=name),
            _row("add", n_in, t_add, backend=name), _row("multiply", n_in, t_mul, backend=name),
            _row("matmul", n_out, t_mm, backend=name, macs=x.size * w.shape[1], max_abs_error=error)]


def _nbytes(array: EncryptedArray) -> int:
    return sum(len(v) for v in array.to_fields().values() if isinstance(v, bytes))


def bench_phe(config: Config, data: dict[str, np.ndarray]) -> tuple[list[dict], float]:
    """The per-value python-paillier loop on ``phe_samples`` values per operation."""
    start = time.perf_counter()
    pub, priv = phe.generate_paillier_keypair(n_length=config.paillier_key_bits)
    keygen = time.perf_counter() - start
    k = config.phe_samples
    xs = [float(v) for v in data["x"].reshape(-1)[:k]]
    weights = [float(data["row"][i % config.d_in]) for i in range(k)]
    reps = config.repeats  # the best of as many runs as ours, not one against our best
    t_enc, enc = _best(lambda: [pub.encrypt(v) for v in xs], reps)
    t_dec, _ = _best(lambda: [priv.decrypt(c) for c in enc], reps)
    t_add, _ = _best(lambda: [a + b for a, b in zip(enc, enc)], reps)
    t_mul, _ = _best(lambda: [c * v for c, v in zip(enc, weights)], reps)
    rows = [[pub.encrypt(float(v)) for v in data["x"][i]] for i in range(min(2, config.batch))]
    outputs = [(i % len(rows), j) for i, j in zip(range(k), range(k))]
    t_mm, _ = _best(lambda: [_phe_dot(rows[i], data["w"][:, j % config.d_out]) for i, j in outputs], reps)
    rows_out = [_row(op, k, t, backend="phe") for op, t in
                zip(OPS, (t_enc, t_dec, t_add, t_mul, t_mm))]
    return rows_out, keygen


def _phe_dot(enc_row: list, column: np.ndarray) -> Any:
    total = enc_row[0] * float(column[0])
    for c, v in zip(enc_row[1:], column[1:]):
        total = total + c * float(v)
    return total


def bench_ckks_methods(secret: SecretContext, data: dict[str, np.ndarray], repeats: int) -> dict[str, float]:
    """Batch matmul two ways: CKKSTensor(batch=True).mm vs a loop over column CKKSVectors."""
    ctx, x, w = secret.public_context().tenseal_context, data["x"], data["w"]
    tensor = ts.ckks_tensor(ctx, x, batch=True).reshape([1, x.shape[1]])
    columns = [ts.ckks_vector(ctx, x[:, j].tolist()) for j in range(x.shape[1])]

    def by_columns() -> list:
        outs = []
        for k in range(w.shape[1]):
            acc = columns[0] * float(w[0, k])
            for j in range(1, w.shape[0]):
                acc += columns[j] * float(w[j, k])
            outs.append(acc)
        return outs

    return {"ckks_tensor_mm": _best(lambda: tensor.mm(w), repeats)[0],
            "ckks_vector_columns": _best(by_columns, repeats)[0]}


def _setup(config: Config) -> tuple[dict[str, SecretContext], dict[str, float]]:
    secrets_, seconds = {}, {}
    for name, options in (("paillier", {"key_bits": config.paillier_key_bits, "workers": config.workers}),
                          ("ckks", {"poly_modulus_degree": config.ckks_poly_modulus_degree,
                                    "workers": config.workers})):
        start = time.perf_counter()
        secrets_[name] = make_he(name, **options)
        seconds[f"{name}_keygen"] = time.perf_counter() - start
    start = time.perf_counter()
    secrets_["paillier"].public_context().encrypt(np.zeros(1))
    seconds["paillier_djn_table"] = time.perf_counter() - start
    secrets_["paillier (1 thread)"] = make_he("paillier", key_bits=config.paillier_key_bits, workers=1)
    return secrets_, seconds


def run(config: Config) -> dict[str, Any]:
    """All measurements as one JSON-ready object."""
    rng = np.random.default_rng()
    data = {"x": rng.uniform(-4, 4, size=(config.batch, config.d_in)),
            "row": rng.normal(size=config.d_in), "w": rng.normal(size=(config.d_in, config.d_out))}
    contexts, setup = _setup(config)
    results: list[dict] = []
    for name, secret in contexts.items():
        results += bench_ours(name, config, secret, data)
    methods = bench_ckks_methods(contexts["ckks"], data, config.repeats)
    phe_rows, setup["phe_keygen"] = bench_phe(config, data)
    results += phe_rows
    baseline = {r["op"]: r["values_per_s"] for r in phe_rows}
    for r in results:
        r["speedup_vs_phe"] = r["values_per_s"] / baseline[r["op"]]
    return {"setup_seconds": setup, "ckks_matmul_method_seconds": methods, "results": results}


def to_markdown(meta: dict[str, Any], body: dict[str, Any], config: Config) -> str:
    """The result table: values/s per operation and backend, with the speedup vs phe."""
    backends = ["phe", "paillier", "paillier (1 thread)", "ckks"]
    cell = {(r["backend"], r["op"]): r for r in body["results"]}
    rows = []
    for op in OPS:
        line = [op, cell[("paillier", op)]["values"]]
        for b in backends:
            r = cell[(b, op)]
            line.append(f"{r['values_per_s']:,.0f}" + ("" if b == "phe" else f" ({r['speedup_vs_phe']:,.0f}x)"))
        rows.append(line)
    text = markdown_header("Homomorphic encryption: values per second (speedup vs phe)", meta) + "\n"
    text += markdown_table(["op", "values", *backends], rows) + "\n"
    setup = ", ".join(f"{k} {v:.2f} s" for k, v in body["setup_seconds"].items())
    text += (f"Shape: X ({config.batch} x {config.d_in}), W ({config.d_in} x {config.d_out}); matmul counts "
             f"the {config.batch * config.d_out} outputs. phe best of {config.repeats} on {config.phe_samples} values "
             f"per op and extrapolated; ours best of {config.repeats} on the full shape. One-off: {setup}.\n")
    methods = body["ckks_matmul_method_seconds"]
    text += (f"\nCKKS batch matmul: CKKSTensor(batch=True).mm {methods['ckks_tensor_mm']:.3f} s vs a loop "
             f"over column CKKSVectors {methods['ckks_vector_columns']:.3f} s (the first is used).\n")
    return text


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    config = parse_args(argv)
    meta = named_report("he", settings=config.settings(), quick=config.quick, argv=argv)  # date, load: at the start
    body = run(config)
    write_json(config.json_path, {**meta, **body})
    write_text(config.markdown_path, to_markdown(meta, body, config))
    print(to_markdown(meta, body, config))
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main, "benchmarks.he"))
