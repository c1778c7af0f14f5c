"""``python -m securefl`` is the ``securefl`` command."""

import sys

from securefl.cli import main

sys.exit(main())
