"""The secure interactive layer of HE-based vertical FL (FATE's hetero NN), two parties.

:class:`PassiveInteractive` (key owner, accumulated noise eps_acc) and
:class:`ActiveInteractive` (noise-masked weights W~, with W = W~ - eps_acc) exchange
tagged messages over a :class:`~protocols.transport.Transport`: ``forward`` gives
the active party z = a @ W for the passive party's activations a, ``backward`` takes
dL/dz, updates W by plain SGD and gives the passive party dL/da. See
:mod:`protocols.interactive.layer` for the algebra and what each party sees,
:mod:`protocols.interactive.engines` for the encrypted products (generic Paillier/CKKS;
slot-packed CKKS in :mod:`protocols.interactive.packed_engines`) and
:mod:`protocols.interactive.packing` for the packed layout.
The layer knows nothing of training loops.
"""

from protocols.interactive.ckks_engine import PACKED_CKKS_OPTIONS, PackedCKKSKey
from protocols.interactive.layer import (SCHEMES, SETUP_MESSAGES, STAGE, TRAINING_MESSAGES,
                                         ActiveInteractive, InteractiveConfig, PassiveInteractive)
from protocols.interactive.packing import Plan, make_plan

__all__ = [
    "PACKED_CKKS_OPTIONS",
    "SCHEMES",
    "SETUP_MESSAGES",
    "STAGE",
    "TRAINING_MESSAGES",
    "ActiveInteractive",
    "InteractiveConfig",
    "PackedCKKSKey",
    "PassiveInteractive",
    "Plan",
    "make_plan",
]
