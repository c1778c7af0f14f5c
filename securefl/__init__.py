"""securefl: secure federated learning across organisations.

The protocol layer lives in :mod:`protocols`; this package composes it into
algorithms and provides the ``securefl`` command line.
"""

__version__ = "0.1.0"
