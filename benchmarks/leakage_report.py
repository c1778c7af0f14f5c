"""The Markdown of the leakage benchmark: the passive party's label attacks, the averaging
server's view, TDCD's hub exchange and the HE key owner's view."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

from benchmarks.common import markdown_header, markdown_table, rendered_line
from benchmarks.key_owner import key_owner_section

if TYPE_CHECKING:
    from benchmarks.leakage import Config


def number_text(value: float | None, std: float | None = None) -> str:
    """``value`` (n/a when None) with `` ± std`` when the std is a number (not None or nan)."""
    if value is None:
        return "n/a"
    return f"{value:.3f}" + (f" ± {std:.3f}" if std is not None and not math.isnan(std) else "")


def hub_section(hubs: Sequence[dict[str, Any]]) -> list[str]:
    """The Markdown of TDCD's hub exchange (absent from results written before it was measured)."""
    if not hubs:
        return []
    rows = [[v["silos"], v["aggregation"], v["messages"], f"{v['float_values']:,}", f"{v['uint64_words']:,}",
             number_text(v["uint64_one_bit_rate"]), number_text(v.get("uint64_top_bits_agree")),
             f"{v['objective']:.6f}"]
            for v in hubs]
    return ["", "## TDCD: what a hub receives from the other hubs", "",
            "What hub0's transport delivered from the other hubs in a short TDCD run (bundled diabetes set, 2"
            " clients per silo, 5 rounds of 5 local steps, an evaluation every round). Plain: each other silo's"
            " Phi (its share of every exchanged row's prediction) and squared weight norm arrive as floats."
            " Secure with three silos: the hubs swap through a pairwise-masked peer sum, so only 64-bit masked"
            " words and public keys arrive and hub0 learns the other silos' sum alone. With two silos the"
            " others' sum is the other silo's Phi itself, which the hub's clients need, so it is swapped in"
            " clear (secure aggregation still hides each client's weights within a silo). The objectives"
            " agree up to fixed-point error.", "",
            markdown_table(["silos", "aggregation", "messages", "float values", "64-bit words", "share of 1 bits",
                            "share with top two bits equal", "final training objective"], rows)]


def markdown(meta: dict[str, Any], results: dict[str, Any], views: Sequence[dict[str, Any]],
             config: Config, hubs: Sequence[dict[str, Any]] = (), key_owner: Sequence[dict[str, Any]] = ()) -> str:
    rows = []
    for name, res in results.items():
        s = res["summary"]
        stfl = ("nothing to attack: no float value received" if s["stfl_float_values"] == 0 else
                f"{s['stfl_float_values']:,} float values received")
        spread = {k: s.get(f"{k}_std") if s["seeds"] > 1 else None  # one seed: no std (older files stored 0)
                  for k in ("norm_auroc", "norm_auroc_oriented", "cosine_auroc")}
        rows.append([name, s["seeds"], f"{s['positive_rate']:.3f}", number_text(s["norm_auroc"], spread["norm_auroc"]),
                     number_text(s.get("norm_auroc_oriented"), spread["norm_auroc_oriented"]),
                     number_text(s["cosine_auroc"], spread["cosine_auroc"]), stfl, ", ".join(s["stfl_kinds"])])
    server = [[v["method"], v["dataset"], v["aggregation"], v["messages"], f"{v['float_values']:,}",
               f"{v['uint64_words']:,}", number_text(v["uint64_one_bit_rate"]),
               number_text(v.get("uint64_top_bits_agree")),
               ", ".join(f"{c} {a:.4f}" for c, a in v["client_accuracy"].items())] for v in views]
    return "\n".join([
        markdown_header("Leakage: label inference by the passive party, and the averaging server's view", meta)
        + rendered_line(meta),
        f"HE-VFL ({config.he}) through the protocol for its first {config.steps} training steps; the passive"
        " party's decrypted dL/da per row is attacked per batch (norm attack: no label known; cosine attack:"
        " one positive row of the batch known, left out of the grading). AUROC 0.5 means the attack learns"
        " nothing, 1.0 that it recovers every label, and one far below 0.5 leaks as much (the score orders the"
        " classes the other way round); mean ± std over seeds of the mean over steps. Unoriented, steps and"
        " seeds on either side of 0.5 cancel in that mean, so the norm attack is also given the cosine"
        " attack's one known positive to orient it (larger norms positive if that row's norm is at least the"
        " batch median; n/a in runs from before it was measured). The norm attack rests on"
        " the minority class's larger errors once the model has learnt the class rate (Li et al.), so it is"
        " weak early in training and on balanced data; the gradients' direction gives the labels away from the"
        " first step. STFL: what each passive party's transport delivered (1 VAE epoch, 1 training epoch).",
        "",
        markdown_table(["dataset", "seeds", "positive rate", "HE-VFL norm attack AUROC",
                        "HE-VFL norm attack AUROC, oriented by one known positive", "HE-VFL cosine attack AUROC",
                        "STFL passive party", "STFL messages received"], rows),
        "## The averaging server's view",
        "",
        "What the server's transport delivered in a short run (CHFL: 3 clients, 2 rounds; GL: 3 epochs, 2"
        " rounds), with plain and with secure aggregation. Plain: every client's update arrives as floats."
        " Secure: no float value arrives, only 64-bit masked words and key-agreement messages; the server"
        " learns the sum alone, and the clients' accuracies equal plain aggregation's up to fixed-point"
        " error. The words look uniform: about half their bits are 1 (as unmasked fixed-point values' are"
        " too, so that alone shows little) and the top two bits of about half agree, where unmasked small"
        " values, 00... or 11... in two's complement, would all agree (n/a in runs from before it was"
        " measured).",
        "",
        markdown_table(["method", "dataset", "aggregation", "messages", "float values", "64-bit words",
                        "share of 1 bits", "share with top two bits equal", "client accuracy"], server),
        *hub_section(hubs),
        *key_owner_section(key_owner),
    ])


__all__ = ["hub_section", "markdown", "number_text"]
