"""``python -m tile2triton``: the same as the ``tile2triton`` command."""

import sys

from .cli import main

sys.exit(main())
