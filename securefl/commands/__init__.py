"""One module per ``securefl`` sub-command: ``add_parser(subparsers)`` and ``run(args)``."""

import re

_ROLE = re.compile(r":(?:mod|func|class|meth|data):`~?([^`]+)`")


def plain_text(docstring: str | None) -> str:
    """A module docstring as ``--help`` text: reStructuredText roles and double backquotes removed."""
    return _ROLE.sub(r"\1", docstring or "").replace("``", "")


__all__ = ["plain_text"]
