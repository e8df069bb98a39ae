"""``python -m blackbox`` runs the command line."""

from .cli import script

script()
