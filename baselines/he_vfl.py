"""HE-VFL: the encrypted vertical split NN of FATE's heterogeneous NN, as two party roles.

The network, initialisation, batch order and optimisers are those of
:mod:`baselines.splitnn` (so with the same ``seed``, ``passive_seed`` and ``share_seed`` the two
reach the same weights, up to fixed-point / CKKS error); only the interactive
layer's passive half runs through the secure two-party protocol of
:mod:`protocols.interactive`. One passive party, as in the STFL paper's FATE baseline.

Flow. Both parties run PSI (ECDH, :mod:`protocols.psi`) on their IDs; the active
party's IDs are its training and test rows, and it never says which is which.
Rows are addressed by their position in the PSI order. For each batch the active
party (which alone decides the order) sends the batch's positions, the passive
party feeds its bottom model and the protocol's forward; the active party adds its
own bottom model and the interactive bias, applies ReLU, the top model, sigmoid and
BCE, and back-propagates dL/dz through the protocol, which returns dL/da to the
passive party. Evaluation runs forward only, on the test rows. The active party's
model and loop are in :mod:`baselines.he_vfl_active`.

What the passive party learns: the intersection, which positions are trained on
(it has to back-propagate them) and, by elimination, which are not, and dL/da for
each of its training rows, from which the labels follow (``benchmarks.leakage``);
never predictions or the active party's features. The active party learns the
interactive layer's output z for each batch, never a. Neither holds the weights
that map a to z: each party draws a share of their initial value (``passive_seed``,
``share_seed``; by default each from the OS) and the passive party sends its share
masked, so W = W_P + R, and neither can solve z = a @ W or dL/da = dz @ W.T for
the other's side.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Iterable

import numpy as np
import torch

from baselines.he_vfl_active import (KINDS, STAGE, ActiveRun, active_model, active_weights, project_training,
                                     schedule_fields, tensor)
from baselines.splitnn import SplitNNConfig, bottom_model, passive_weights, standardizer
from protocols.codec import Tag
from protocols.errors import EncodingOverflowError, InputError, ProtocolError
from protocols.interactive import InteractiveConfig, PassiveInteractive
from protocols.psi import psi_active, psi_passive
from protocols.transport import Transport, relayed, run_parties
from securefl.algorithms.training import binary_labels
from securefl.data import PartyTable, VerticalSplit
from securefl.runtime import binary_metrics, finite_scores, resolve_device
from securefl.runtime import validation as check
from securefl.runtime.threads import intra_op_threads

DATASET_ACTIVATION_BOUNDS = {"give_credit": 512.0}
"""Public bounds on |a| for registered datasets whose activations pass the default 64 from
the first step: give_credit's standardised features are heavy-tailed (|x| up to 228). A larger
bound costs only CKKS precision; 512 is the most packed CKKS allows."""


def activation_bound_for(dataset: str | None) -> float:
    """The public activation bound HE-VFL uses for a registered ``dataset`` (default 64)."""
    return DATASET_ACTIVATION_BOUNDS.get(dataset or "", HEVFLConfig.activation_bound)


@dataclass(frozen=True)
class HEVFLConfig(SplitNNConfig):
    """HE-VFL settings: the split NN's (paper defaults) plus the interactive layer's.

    ``he``: "ckks" (packed, fast) or "paillier". See :class:`InteractiveConfig` for
    ``noise_scale``, ``activation_bound``, ``mask_bits``, ``packed``, ``key_bits``,
    ``precision_bits``, ``insecure_small_keys_for_tests`` and ``helper`` (packed CKKS: the
    active party shares its products with a helper process). ``threads``: torch and BLAS
    threads of each party while it runs (None: as is); the default 1 keeps idle library
    threads from spinning on the cores the other party and the helper need. ``max_steps``: stop
    training after that many steps (for timing runs; the result then reports the
    steps done and ``projected_training_s`` for all of them). ``max_eval_batches``:
    likewise score only that many test batches (metrics then cover those rows only;
    ``projected_inference_s`` scales the time to the whole test set).
    """

    he: str = "ckks"
    noise_scale: float = 1.0
    activation_bound: float = 64.0
    mask_bits: int = 16
    packed: bool = True
    key_bits: int = 2048
    precision_bits: int = 32
    insecure_small_keys_for_tests: bool = False
    workers: int | None = None
    helper: bool = True
    threads: int | None = 1
    max_steps: int | None = None
    max_eval_batches: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.interactive_config().check_batch(self.batch_size)  # validates the HE settings too
        check.positive_int(type(self).__name__, "threads", self.threads, optional=True)
        for name in ("max_steps", "max_eval_batches"):
            check.positive_int("HEVFLConfig", name, getattr(self, name), optional=True)

    def interactive_config(self) -> InteractiveConfig:
        return InteractiveConfig(
            he=self.he, lr=self.interactive_lr, noise_scale=self.noise_scale,
            activation_bound=self.activation_bound, packed=self.packed, mask_bits=self.mask_bits,
            key_bits=self.key_bits, precision_bits=self.precision_bits,
            insecure_small_keys_for_tests=self.insecure_small_keys_for_tests, workers=self.workers,
            helper=self.helper)

    def plain(self) -> SplitNNConfig:
        """The split-NN settings this run must match."""
        return SplitNNConfig(**{f.name: getattr(self, f.name) for f in fields(SplitNNConfig)})

    def total_steps(self, train_rows: int) -> int:
        """Training steps of the full schedule (epochs x batches)."""
        return self.epochs * -(-train_rows // self.batch_size)


Observer = Callable[[int, np.ndarray, np.ndarray], None]
"""``observe(step, table_rows, dL/da)``: the passive party's view of one training step."""


def _standardized(table: PartyTable, rows: np.ndarray, fit_rows: np.ndarray) -> np.ndarray:
    mean, std = standardizer(table.features[fit_rows])
    return (table.features[rows] - mean) / std


def _limited_threads(role: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """Run a party role with ``config.threads`` torch and BLAS threads (see HEVFLConfig)."""
    @functools.wraps(role)
    def run(transport: Transport, **kwargs: Any) -> dict[str, Any]:
        config = kwargs.get("config")
        with intra_op_threads(config.threads if isinstance(config, HEVFLConfig) else None):
            return role(transport, **kwargs)
    return run


def _check_active_inputs(passive: Any, table: PartyTable, config: Any) -> None:
    if not isinstance(config, HEVFLConfig):
        raise InputError(f"config must be an HEVFLConfig, got {type(config).__name__}")
    if not isinstance(passive, str):
        raise InputError("HE-VFL runs with exactly one passive party: pass its name as a str, got "
                         f"{passive!r}")
    if table.labels is None:
        raise InputError(f"the active party's table {table.name!r} has no labels")
    binary_labels(table.labels, owner=f"active party {table.name!r}")  # BCE and the scores need 0/1


@_limited_threads
def he_vfl_active(transport: Transport, *, passive: str, table: PartyTable,
                  train_ids: Iterable[str], test_ids: Iterable[str], config: HEVFLConfig,
                  return_weights: bool = False) -> dict[str, Any]:
    """The active party (labels): PSI, training through the secure layer, evaluation.

    ``return_weights`` adds this party's final parameters (W~, not W, for the
    interactive layer's passive half) to the result, for tests.
    """
    _check_active_inputs(passive, table, config)
    device, phases, start = resolve_device(config.device), {}, time.perf_counter()
    psi = psi_active(transport, passive=[passive], ids=list(table.ids))
    phases["psi"] = time.perf_counter() - start
    position = {v: p for p, v in enumerate(psi.ids)}
    train, test = sorted(position.keys() & set(train_ids)), sorted(position.keys() & set(test_ids))
    if not train or not test:
        raise InputError(f"the intersection ({psi.size} rows) holds {len(train)} training and "
                         f"{len(test)} test rows; both must be non-empty")
    rows = np.asarray(psi.indices)
    x = _standardized(table, rows, rows[[position[v] for v in train]])
    y = np.asarray(table.labels)[rows].astype(np.float64)
    mark = time.perf_counter()
    model = active_model(transport, passive, table.n_features, config, device)
    try:
        run = ActiveRun(transport, passive, config, model, position, x, y, device)
        phases["setup"], mark = time.perf_counter() - mark, time.perf_counter()
        epochs, steps = run.train(train)
        phases["training"], mark = time.perf_counter() - mark, time.perf_counter()
        scores = run.predict(test)
        phases["inference"] = time.perf_counter() - mark
    finally:
        model.layer.close()
    scored = test[:len(scores)]
    result = {"method": "he-vfl", "he": config.he,
              "metrics": binary_metrics(y[[position[v] for v in scored]], finite_scores(scores, who="he-vfl")),
              "phases": phases, "seconds": time.perf_counter() - start, "intersection_size": psi.size,
              **schedule_fields(run, phases, epochs, steps, len(train), len(test), len(scored))}
    if return_weights:
        result["weights"] = active_weights(model)
    return result


def _positions(message: Any, size: int) -> tuple[str, np.ndarray]:
    kind, rows = message["kind"], message["rows"]
    if kind not in KINDS:
        raise ProtocolError(f"unknown batch kind {kind!r}")
    if not isinstance(rows, np.ndarray) or rows.ndim != 1 or rows.dtype.kind not in "iu" \
            or (rows.size and (rows.min() < 0 or rows.max() >= size)) \
            or (kind != "stop" and rows.size == 0):
        raise ProtocolError(f"malformed batch positions for {size} intersection rows")
    return kind, rows.astype(np.int64)


@_limited_threads
def he_vfl_passive(transport: Transport, *, active: str, table: PartyTable, config: HEVFLConfig,
                   return_weights: bool = False, observe: Observer | None = None) -> dict[str, Any]:
    """The passive party (features only): PSI, then whatever batches the active party asks for.

    ``observe(step, rows, grad)``, if given, sees what this party learns in each training
    step: its own table rows of the batch and dL/da for them, as it decrypts it (Algorithm
    2's last line), so a leakage study can attack exactly the passive party's view.
    """
    if not isinstance(config, HEVFLConfig):
        raise InputError(f"config must be an HEVFLConfig, got {type(config).__name__}")
    device, start = resolve_device(config.device), time.perf_counter()
    psi = psi_passive(transport, active=active, ids=list(table.ids))
    x = _standardized(table, np.asarray(psi.indices), np.arange(table.n_rows))
    width = config.passive_width(table.n_features)
    bottom = bottom_model(table.n_features, width, config.seed, "passive", device)
    adam = torch.optim.Adam(bottom.parameters(), lr=config.lr, foreach=True)
    layer = PassiveInteractive(transport, active=active, n_in=width, config=config.interactive_config())
    layer.setup(lambda n_out, bound: passive_weights((width, n_out), bound, config.passive_seed))
    step, trained = 0, 0
    while True:
        step += 1
        kind, rows = _positions(transport.recv(active, Tag(step, STAGE, "batch")), psi.size)
        if kind == "stop":
            break
        train = kind == "train"
        with torch.set_grad_enabled(train):
            a = bottom(tensor(x[rows], device))
        try:
            layer.forward(a.detach().cpu().numpy(), step=step, train=train)
        except EncodingOverflowError as err:  # the usual cause, in the user's terms
            raise EncodingOverflowError(f"passive party {transport.name!r}, step {step}: {err}; its bottom-model "
                                        "activations passed the public bound the encryption was set up for: either "
                                        "the features are heavy-tailed (raise --activation-bound, at most 512 with "
                                        "packed CKKS) or training is likely diverging (a lower learning rate may "
                                        "help)") from None
        if train:
            da = layer.backward(step=step)
            if observe is not None:
                observe(step, np.asarray(psi.indices)[rows], np.array(da, copy=True))
            adam.zero_grad()
            a.backward(tensor(da, device))
            adam.step()
            trained += 1
    result = {"intersection_size": psi.size, "steps": trained, "seconds": time.perf_counter() - start}
    if return_weights:
        result["weights"] = {f"bottom_passive.{k}": v.detach().cpu().numpy()
                             for k, v in bottom.state_dict().items()}
        result["weights"]["interactive.noise"] = layer.noise.copy()
    return result


def run_he_vfl(split: VerticalSplit, config: HEVFLConfig | None = None, *,
               backend: str = "inprocess", observe: Observer | None = None) -> dict[str, Any]:
    """Run both roles on a split (one passive party) and return the result-file fields.

    ``observe``: see :func:`he_vfl_passive` (in-process runs only: a callback stays in its process).
    """
    config = config or HEVFLConfig()
    if len(split.dataset.passive) != 1:
        raise InputError(f"HE-VFL takes exactly one passive party; dataset {split.dataset.name!r} has "
                         f"{len(split.dataset.passive)}")
    if observe is not None and backend != "inprocess":
        raise InputError("observe= needs backend='inprocess': the passive party's callback runs in its process")
    active, passive = split.dataset.active, split.dataset.passive[0]
    quiet = replace(config, progress=None)
    with relayed(config.progress, backend) as progress:  # the bar is the active party's
        run = run_parties(
            {active.name: he_vfl_active, passive.name: he_vfl_passive}, backend=backend,
            kwargs={active.name: {"passive": passive.name, "table": active, "train_ids": split.train_ids,
                                  "test_ids": split.test_ids, "config": replace(config, progress=progress)},
                    passive.name: {"active": active.name, "table": passive, "config": quiet,
                                   **({"observe": observe} if observe is not None else {})}})
    result = dict(run.results[active.name])
    result.update(dataset=split.dataset.name, seed=config.seed, device=config.device,
                  seconds=run.seconds, bytes=run.bytes,
                  bytes_per_party={name: comm["bytes_sent"] for name, comm in run.comm.items()},
                  bytes_per_tag={name: comm["per_tag"] for name, comm in run.comm.items()},
                  settings=config.settings(), **run.gpu_fields())
    return result


__all__ = ["DATASET_ACTIVATION_BOUNDS", "HEVFLConfig", "STAGE", "activation_bound_for", "he_vfl_active",
           "he_vfl_passive", "project_training", "run_he_vfl"]
