"""``python -m engine`` runs the gpusizer command line."""

import sys

from .cli import main

sys.exit(main())
