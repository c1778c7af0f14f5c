"""``securefl.commands.plain_text``: docstrings made into --help text."""

import pytest

from securefl.commands import plain_text


@pytest.mark.parametrize(("doc", "text"), [
    ("``securefl psi``: align rows", "securefl psi: align rows"),
    ("see :mod:`protocols.transport.links` and :func:`~securefl.run`",
     "see protocols.transport.links and securefl.run"),
    (":class:`A` or :meth:`B.c` or :data:`D`", "A or B.c or D"),
    ("a `single` backquote stays", "a `single` backquote stays"),
    (None, ""),
])
def test_roles_and_literals_become_plain_words(doc, text):
    # Act / Assert
    assert plain_text(doc) == text
