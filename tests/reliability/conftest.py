"""The reliability tests import their helpers (``helpers``, ``fault_problems``) by plain name."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
