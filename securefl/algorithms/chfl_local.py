"""One CHFL client's local models and training loop (Algorithm 2, lines 11-18), without any messaging.

:class:`ClientModels` holds the common column (federated), and the client-local
heads trained beside it on the very same batches:

- ``"chfl"``: unique columns with lateral connections, one per ``mu`` in
  ``(0, *mus)`` (:class:`~securefl.models.pnn.UniqueColumns`), trained on the
  combined output's loss with the common column fixed (lines 15-16);
- ``"local"``: the Local baseline, an MLP on all the client's features;
- ``"simple"``: the paper's "simple method" (V-B5), an MLP on
  ``[unique features, softmax of the common column's output]``.

Per batch the common column takes its Adam step on its own loss first (line 14);
the heads then see its updated, detached activations. The common column is never
influenced by a head, so adding heads changes nothing it computes. Optimiser
state (Adam moments) stays on the client across rounds; only the common
column's parameters are replaced by the average after each round.

Both optimisers are torch's fused Adam: with four stacked mu columns the step was
about 30% of a CPU run in its foreach form, three times slower than fused (whose
updates differ from the per-tensor loop's in the last bits; same seed, same numbers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from securefl.algorithms.training import as_tensor, device_generator
from securefl.data.chfl_partition import ClientData
from securefl.models.pnn import Column, UniqueColumns
from securefl.models.scaling import Standardizer
from securefl.runtime import SeedPlan

HEADS = ("chfl", "local", "simple")


@dataclass
class _Tensors:
    common: torch.Tensor
    unique: torch.Tensor
    labels: torch.Tensor


def _scaler(x: np.ndarray, config: Any) -> Standardizer:
    """The client's scaler, fitted on its own training rows; 0/1 indicator columns stay as they are.

    Standardising a rare indicator (a soil type seen in 3 of a client's rows) would
    turn its 1 into ~25 here and ~8 at another client, so the federated common
    column would see one feature on very different scales; indicators are kept 0/1.
    ``config.standardize=False`` feeds every column raw.
    """
    identity = Standardizer(mean=np.zeros(x.shape[1]), scale=np.ones(x.shape[1]))
    if not config.standardize:
        return identity
    fitted = Standardizer.fit(x)
    binary = np.all((x == 0) | (x == 1), axis=0)
    return Standardizer(mean=np.where(binary, 0.0, fitted.mean), scale=np.where(binary, 1.0, fitted.scale))


class ClientModels:
    """A client's common column, heads, optimisers, scaled data and per-round accuracies."""

    def __init__(self, data: ClientData, n_classes: int, config: Any, device: torch.device, *,
                 common: bool = True) -> None:
        plan = SeedPlan(config.seed)
        self.config, self.data, self.train_common = config, data, common
        scale_c, scale_u = _scaler(data.train.common, config), _scaler(data.train.unique, config)
        self.splits = {name: _Tensors(as_tensor(scale_c.transform(s.common), device),
                                      as_tensor(scale_u.transform(s.unique), device),
                                      as_tensor(s.labels, device, torch.int64))
                       for name, s in (("train", data.train), ("val", data.val), ("test", data.test))}
        n_c, n_u = data.train.common.shape[1], data.train.unique.shape[1]
        # every client draws theta_c^0 from the same stream: the server's common initial model
        self.common = Column(n_c, config.hidden, n_classes, generator=plan.torch("chfl/common/init")).to(device)

        def init(model: str) -> torch.Generator:  # one stream per model: none depends on what else runs
            return plan.torch(f"chfl/heads/{data.name}/{model}/init")

        self.mus = (0.0, *config.mus)
        self.heads: dict[str, torch.nn.Module] = {}
        if "chfl" in config.heads:
            self.heads["chfl"] = UniqueColumns(n_u, config.hidden, n_classes, mus=self.mus,
                                               generators=[init(f"chfl_mu={m:g}") for m in self.mus])
        if "local" in config.heads:
            self.heads["local"] = Column(n_c + n_u, config.hidden, n_classes, generator=init("local"))
        if "simple" in config.heads:
            self.heads["simple"] = Column(n_u + n_classes, config.hidden, n_classes, generator=init("simple"))
        for head in self.heads.values():
            head.to(device)
        self.opt_common = torch.optim.Adam(self.common.parameters(), lr=config.lr, fused=True)
        head_params = [p for h in self.heads.values() for p in h.parameters()]
        self.opt_heads = torch.optim.Adam(head_params, lr=config.lr, fused=True) if head_params else None
        self.batches = device_generator(plan, f"chfl/batches/{data.name}", device)
        self.history: dict[str, dict[str, list]] = {v: {"val": [], "test": []} for v in self.variants()}

    def variants(self) -> list[str]:
        """The names of the models this client scores: common, chfl mu=..., local, simple."""
        names = ["common"] if self.train_common else []
        if "chfl" in self.heads:
            names += [f"chfl_mu={m:g}" for m in self.mus]
        return names + [h for h in ("local", "simple") if h in self.heads]

    def _head_loss(self, t: _Tensors, idx: torch.Tensor) -> torch.Tensor:
        xc, xu, y = t.common[idx], t.unique[idx], t.labels[idx]
        loss = torch.zeros((), device=y.device)
        if "chfl" in self.heads or "simple" in self.heads:
            with torch.no_grad():
                acts = self.common.activations(xc)
        if "chfl" in self.heads:
            out = acts[-1].unsqueeze(0) + self.heads["chfl"](xu, acts)
            loss = loss + F.cross_entropy(out.reshape(-1, out.shape[-1]), y.repeat(out.shape[0])) * out.shape[0]
        if "local" in self.heads:
            loss = loss + F.cross_entropy(self.heads["local"](torch.cat([xc, xu], 1)), y)
        if "simple" in self.heads:
            loss = loss + F.cross_entropy(self.heads["simple"](torch.cat([xu, torch.softmax(acts[-1], 1)], 1)), y)
        return loss

    def train_round(self) -> None:
        """E local epochs of Algorithm 2 (lines 12-18) over shuffled batches."""
        t = self.splits["train"]
        n, size = len(t.labels), self.config.batch_size
        for _ in range(self.config.local_epochs):
            order = torch.randperm(n, generator=self.batches, device=self.batches.device)
            for start in range(0, n, size):
                idx = order[start:start + size]
                if self.train_common:
                    loss = F.cross_entropy(self.common(t.common[idx]), t.labels[idx])
                    self.opt_common.zero_grad(set_to_none=True)
                    loss.backward()
                    self.opt_common.step()
                if self.opt_heads is not None:
                    loss = self._head_loss(t, idx)
                    self.opt_heads.zero_grad(set_to_none=True)
                    loss.backward()
                    self.opt_heads.step()

    def predictions(self, split: str) -> dict[str, torch.Tensor]:
        """Predicted classes of every variant on ``split`` ("val" or "test")."""
        t = self.splits[split]
        with torch.inference_mode():
            acts = self.common.activations(t.common)
            out = {"common": acts[-1].argmax(1)} if self.train_common else {}
            if "chfl" in self.heads:
                combined = acts[-1].unsqueeze(0) + self.heads["chfl"](t.unique, acts)
                out.update({f"chfl_mu={m:g}": combined[g].argmax(1) for g, m in enumerate(self.mus)})
            if "local" in self.heads:
                out["local"] = self.heads["local"](torch.cat([t.common, t.unique], 1)).argmax(1)
            if "simple" in self.heads:
                simple_in = torch.cat([t.unique, torch.softmax(acts[-1], 1)], 1)
                out["simple"] = self.heads["simple"](simple_in).argmax(1)
        return out

    def evaluate(self) -> None:
        """Append this round's validation and test accuracy of every variant to the history."""
        for split in ("val", "test"):
            labels = self.splits[split].labels
            for name, pred in self.predictions(split).items():
                self.history[name][split].append(int((pred == labels).sum().item()) / len(labels))

    def selections(self) -> dict[str, dict[str, Any]]:
        """Per method, the model chosen on this client's validation set and its test accuracy.

        ``chfl`` picks (mu > 0, round) together, ``chfl_mu0`` the round of mu = 0, every
        other method its round; ties go to the smallest mu, then the earliest round.
        With ``select_round=False`` only the last round is eligible.
        """
        groups = {"common": ["common"], "local": ["local"], "simple": ["simple"],
                  "chfl_mu0": ["chfl_mu=0"], "chfl": [f"chfl_mu={m:g}" for m in self.mus[1:]]}
        out = {}
        for method, names in groups.items():
            names = [n for n in names if n in self.history]
            if not names:
                continue
            val = np.array([self.history[n]["val"] for n in names])
            if not self.config.select_round:
                val[:, :-1] = -1.0
            g, r = np.unravel_index(int(np.argmax(val)), val.shape)
            out[method] = {"variant": names[g], "round": int(r) + 1, "val": float(val[g, r]),
                           "test": self.history[names[g]]["test"][r],
                           "last_round_test": self.history[names[g]]["test"][-1]}
        return out


__all__ = ["ClientModels", "HEADS"]
