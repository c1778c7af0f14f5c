"""The secure interactive layer of HE-VFL as a two-party protocol (STFL paper, Algorithms 1-2).

This is the interactive layer of FATE's heterogeneous NN: the passive party (key
owner, the paper's guest) holds its bottom-model activations ``a`` (batch x n) and
an accumulated noise ``eps_acc`` (n x m); the active party (the paper's host)
holds the noise-masked weights ``W~`` (n x m). Neither knows the true weights

    W = W~ - eps_acc                                    (the invariant)

(each holds one share of the initial W, see Set-up)

(FATE keeps the same invariant with the opposite sign, W = W~ + acc_noise) and the
layer computes ``z = a @ W`` for the active party. Messages per step
(``Tag(step, stage, name)``; [.] = encrypted under the passive party's key):

Forward (Algorithm 1)
  P -> A  x:        [a]
  P -> A  x_back:   [a.T], [eps_acc]                          (training steps; sent while A
                                                               computes the forward product)
  A -> P  z_masked: [a @ W~ + eps_s]                          (fresh mask eps_s)
  P -> A  z_reply:  (a @ W~ + eps_s) - a @ eps_acc = z + eps_s
  A:      z = z_reply - eps_s
Backward (Algorithm 2), given dz = dL/dz from the active party's top model
  A -> P  g_masked: [a.T @ dz + eps_s']                       (= [dL/dW + eps_s'])
  A -> P  da:       [dz @ W~.T - dz @ [eps_acc].T] = [dz @ W.T] = [dL/da]
  P -> A  g_reply:  dL/dW + eps_s' - eps_w / lr               (fresh eps_w; then
                                                               eps_acc += eps_w)
  A:      W~ -= lr * (dL/dW - eps_w / lr)          so W~ - eps_acc keeps the invariant and
                                                   W moves by exactly -lr * dL/dW
  P:      dL/da = Dec(da), for its bottom model

Both gradients use the weights of the forward pass: ``dL/da`` is computed with the old
``W~`` and the old ``eps_acc`` (which is why P encrypts eps_acc before adding eps_w);
the paper's listing is ambiguous about this order. The order of the messages lets the
parties overlap: P encrypts ``x_back`` while A computes the forward product, A computes
``da`` (in a helper process with packed CKKS, ``InteractiveConfig.helper``) while it
computes the weight gradient, and P opens ``g_masked`` while A finishes ``da``. The update is plain SGD with
rate ``lr``: an Adam step needs the true gradient, which no party sees (A sees it
only masked by eps_w / lr), so it cannot be applied under this masking. FATE does
the same (its interactive layer is a numpy dense layer updated with
``interactive_layer_lr``); the bottom and top models keep their own optimiser.
Set-up: P sends its public context (``hello``); A answers with n_out and the public
bound of each share of the initial weights (``ready``); P draws its share W_P (its own
randomness, within that bound) and a first noise eps_acc ~ U(-noise_scale, noise_scale)
from the OS, and sends ``init``: W_P + eps_acc; A adds its own share R (within the same
bound; from the OS unless its caller seeds it), so W~ = W_P + R + eps_acc and the initial
W = W_P + R. Neither party ever holds W. FATE starts eps_acc at zero with weights the
active party drew, which hands it ``z = a @ W`` with W known: ``a`` itself wherever
n_out >= n_in. The opposite, P drawing all of W (as this layer did until 2026-11-27),
hands P W and, from the dL/da it decrypts, ``dz = dL/da @ pinv(W.T)`` wherever
n_in >= n_out, so every later W (it knows ``a``) and A's masks as well.

What each party sees: P sees only masked values (z + eps_s, dL/dW + eps_s') and its
own dL/da; A sees [a], z, W~ and the gradient masked by eps_w / lr; only public HE
contexts travel. Masks and noise come from the OS (``secrets`` / ``os.urandom``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from protocols.checks import finite_number
from protocols.codec import Tag
from protocols.errors import InputError, ProtocolError
from protocols.he import PublicContext, SecretContext, load_public_context
from protocols.interactive.ckks_engine import MASK_BITS, PACKED_CKKS_OPTIONS, PackedCKKSKey
from protocols.interactive.config import SCHEMES, InteractiveConfig
from protocols.interactive.engines import ActiveEngine, GenericActive, GenericPassive, PassiveEngine, peer_array
from protocols.interactive.packed_engines import PackedActive, PackedPassive
from protocols.randomness import os_uniform
from protocols.transport import Transport

STAGE = "interactive"
SETUP_MESSAGES = ("hello", "ready", "init")
"""Message names sent once per run (the passive party's public context; the reply; W~ at the start)."""
TRAINING_MESSAGES = ("x_back", "g_masked", "g_reply", "da")
"""Message names sent once per training step only; the others (x, z_masked, z_reply) go
once per batch, training and evaluation alike. For byte accounting and projections."""


def passive_engine(secret: SecretContext, n_in: int, n_out: int, bound: float) -> PassiveEngine:
    """The packed engine for a :class:`PackedCKKSKey`, the generic one otherwise."""
    if isinstance(secret, PackedCKKSKey):
        return PackedPassive(secret, n_in, n_out, bound)
    return GenericPassive(secret, n_in, n_out, bound)


def active_engine(public: PublicContext, n_in: int, n_out: int, *, packed_layout: bool,
                  mask_bits: int = MASK_BITS, helper: bool = False) -> ActiveEngine:
    """The evaluator's engine matching the key owner's announcement (``helper``: packed only)."""
    if packed_layout:
        return PackedActive(public, n_in, n_out, mask_bits=mask_bits, helper=helper)
    return GenericActive(public, n_in, n_out, mask_bits=mask_bits)


def _matrix(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.shape != shape or not np.all(np.isfinite(array)):
        raise InputError(f"{name} must be a finite array of shape {shape}, got {array.shape}")
    return array


MAX_WIDTH = 1 << 16
"""The most units a peer may announce for its side of the interactive layer."""
MAX_WEIGHTS = 1 << 26
"""The most entries of W (n_in x n_out) a peer's announcement may make this party hold (512 MB of float64)."""
MAX_INIT_BOUND = 1e6
"""The largest bound of the initial W's entries a peer may announce (the active party's is 1/sqrt(n_in))."""


def _check_width(peer: str, name: str, value: Any, other: int) -> None:
    """ProtocolError unless a peer's announced width is an int a layer of ``other`` units can hold:
    a huge one would end in a raw torch error or an allocation of gigabytes."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WIDTH \
            or value * other > MAX_WEIGHTS:
        raise ProtocolError(f"party {peer!r} announced an invalid {name} {value!r} (at most {MAX_WIDTH} units,"
                            f" and {MAX_WEIGHTS} weights with this party's {other})")


InitialWeights = Callable[[int, float], np.ndarray]
"""The passive party's draw of the initial W: (n_out, bound) -> (n_in x n_out) within +-bound."""
InitialBound = Callable[[int], float]
"""The active party's public bound of each share of the initial W, given the passive party's n_in."""
InitialShare = Callable[[int, float], np.ndarray]
"""The active party's share of the initial W: (n_in, bound) -> (n_in x n_out) within +-bound."""


class PassiveInteractive:
    """The passive party's side: owns the HE key and eps_acc."""

    def __init__(self, transport: Transport, *, active: str, n_in: int,
                 config: InteractiveConfig, stage: str = STAGE) -> None:
        if isinstance(n_in, bool) or not isinstance(n_in, int) or n_in < 1:
            raise InputError(f"n_in must be a positive int, got {n_in!r}")
        config.check_width(n_in)
        self.t, self.active, self.n_in, self.config, self.stage = transport, active, n_in, config, stage
        self.engine: PassiveEngine | None = None
        self.noise = np.zeros((n_in, 0))  # eps_acc, once setup() knows n_out

    def _tag(self, step: int, name: str) -> Tag:
        return Tag(step, self.stage, name)

    def setup(self, init: InitialWeights) -> int:
        """Make keys, send the public context, learn n_out, send init(...) + eps_acc; returns n_out.

        ``init(n_out, bound)`` draws this party's share of the initial weights; only it ever
        sees that share, and the active party adds its own.
        """
        key = self.config.make_key()
        self.t.send(self.active, self._tag(0, "hello"), scheme=self.config.he,
                    packed=self.config.packed_ckks, n_in=self.n_in,
                    context=key.public_context().serialize())
        ready = self.t.recv(self.active, self._tag(0, "ready"))
        n_out, bound = ready["n_out"], ready["init_bound"]
        _check_width(self.active, "n_out", n_out, self.n_in)
        if not finite_number(bound) or not 0 < bound <= MAX_INIT_BOUND:
            raise ProtocolError(f"party {self.active!r} announced an invalid initial-weight bound {bound!r}")
        self.engine = passive_engine(key, self.n_in, n_out, self.config.activation_bound)
        weight = _matrix("initial weight", init(n_out, float(bound)), (self.n_in, n_out))
        self.noise = os_uniform(self.config.noise_scale, weight.shape)
        self.t.send(self.active, self._tag(0, "init"), weight=weight + self.noise)
        return n_out

    def _ready(self) -> PassiveEngine:
        if self.engine is None:
            raise InputError("call setup() first")
        return self.engine

    def forward(self, a: np.ndarray, *, step: int, train: bool) -> None:
        """Algorithm 1 for one batch of activations ``a`` (rows x n_in)."""
        engine = self._ready()
        a = np.asarray(a, dtype=np.float64)
        if a.ndim != 2 or a.shape[1] != self.n_in or a.shape[0] < 1:
            raise InputError(f"activations must have shape (rows, {self.n_in}), got {a.shape}")
        self.t.send(self.active, self._tag(step, "x"), engine.encrypt_input(a))
        if train:  # encrypted while the active party computes the forward product
            self.t.send(self.active, self._tag(step, "x_back"), engine.encrypt_backward(a, self.noise))
        masked = self.t.recv(self.active, self._tag(step, "z_masked"))
        reply = engine.open_masked(masked.fields, "forward", a @ self.noise)
        self.t.send(self.active, self._tag(step, "z_reply"), reply)

    def backward(self, *, step: int) -> np.ndarray:
        """Algorithm 2 after :meth:`forward` of the same step; returns dL/da."""
        engine = self._ready()
        masked = self.t.recv(self.active, self._tag(step, "g_masked"))
        eps_w = os_uniform(self.config.noise_scale, self.noise.shape)
        reply = engine.open_masked(masked.fields, "weight", eps_w / self.config.lr)
        self.noise = self.noise + eps_w
        self.t.send(self.active, self._tag(step, "g_reply"), reply)
        return engine.open_input_grad(self.t.recv(self.active, self._tag(step, "da")).fields)


class ActiveInteractive:
    """The active party's side: owns W~ (noise-masked weights), evaluates under HE."""

    def __init__(self, transport: Transport, *, passive: str, n_out: int,
                 config: InteractiveConfig, stage: str = STAGE) -> None:
        if isinstance(n_out, bool) or not isinstance(n_out, int) or n_out < 1:
            raise InputError(f"n_out must be a positive int, got {n_out!r}")
        self.t, self.passive, self.n_out, self.config, self.stage = transport, passive, n_out, config, stage
        self.engine: ActiveEngine | None = None
        self.weight = np.zeros((0, n_out))

    def _tag(self, step: int, name: str) -> Tag:
        return Tag(step, self.stage, name)

    def setup(self, init_bound: InitialBound, share: InitialShare | None = None) -> int:
        """Receive the public context, announce n_out and ``init_bound(n_in)``, receive the passive
        party's masked share and add this party's, ``share(n_in, bound)`` (default: uniform within
        the bound from the OS), to make W~; returns n_in."""
        hello = self.t.recv(self.passive, self._tag(0, "hello"))
        scheme, packed, n_in = hello["scheme"], hello["packed"], hello["n_in"]
        if scheme != self.config.he or packed is not self.config.packed_ckks:
            raise ProtocolError(f"party {self.passive!r} runs {scheme!r} (packed={packed!r}); this party "
                                f"expects {self.config.he!r} (packed={self.config.packed_ckks})")
        _check_width(self.passive, "n_in", n_in, self.n_out)
        self.config.check_width(n_in, name=f"party {self.passive!r}'s n_in")
        small = self.config.insecure_small_keys_for_tests
        public = load_public_context(scheme, hello["context"], workers=self.config.workers,
                                     insecure_small_keys_for_tests=small)
        if packed and (tuple(public.config.coeff_mod_bit_sizes), public.config.scale_bits) != (
                PACKED_CKKS_OPTIONS["coeff_mod_bit_sizes"], PACKED_CKKS_OPTIONS["scale_bits"]):
            raise ProtocolError("the packed CKKS context does not have the packed engine's parameters")
        self.engine = active_engine(public, n_in, self.n_out, packed_layout=packed,
                                    mask_bits=self.config.mask_bits, helper=self.config.helper)
        bound = float(init_bound(n_in))
        if not 0 < bound < math.inf:
            raise InputError(f"the initial-weight bound must be a positive finite number, got {bound!r}")
        self.t.send(self.passive, self._tag(0, "ready"), n_out=self.n_out, init_bound=bound)
        init = self.t.recv(self.passive, self._tag(0, "init"))
        theirs = peer_array(init.fields, "weight", (n_in, self.n_out), "initial W~")
        mine = os_uniform(bound, theirs.shape) if share is None else share(n_in, bound)
        self.weight = theirs + _matrix("initial weight share", mine, theirs.shape)
        self.engine.prepare_forward(self.weight)
        return n_in

    def _ready(self) -> ActiveEngine:
        if self.engine is None:
            raise InputError("call setup() first")
        return self.engine

    def forward(self, *, step: int, rows: int, train: bool) -> np.ndarray:
        """Algorithm 1: z = a @ W (rows x n_out) for the passive party's next batch."""
        engine = self._ready()
        engine.load_input(self.t.recv(self.passive, self._tag(step, "x")).fields, rows=rows)
        fields, mask = engine.forward(self.weight)
        self.t.send(self.passive, self._tag(step, "z_masked"), fields)
        if train:
            engine.load_backward(self.t.recv(self.passive, self._tag(step, "x_back")).fields)
        return engine.unmask(mask, self.t.recv(self.passive, self._tag(step, "z_reply")).fields)

    def backward(self, dz: np.ndarray, *, step: int) -> None:
        """Algorithm 2 with dz = dL/dz (rows x n_out): sends [dL/da], updates W~."""
        engine = self._ready()
        dz = _matrix("dz", dz, (engine.rows, self.n_out))
        da = engine.start_input_grad(dz, self.weight)
        fields, mask = engine.weight_grad(dz)
        self.t.send(self.passive, self._tag(step, "g_masked"), fields)
        self.t.send(self.passive, self._tag(step, "da"), da())
        grad = engine.unmask(mask, self.t.recv(self.passive, self._tag(step, "g_reply")).fields)
        self.weight = self.weight - self.config.lr * grad  # grad = dL/dW - eps_w / lr
        engine.prepare_forward(self.weight)

    def close(self) -> None:
        """Stop the engine's helper process, if any (the layer is unusable afterwards)."""
        if self.engine is not None:
            self.engine.close()


__all__ = ["ActiveInteractive", "InteractiveConfig", "PassiveInteractive", "SCHEMES", "SETUP_MESSAGES", "STAGE",
           "TRAINING_MESSAGES"]
