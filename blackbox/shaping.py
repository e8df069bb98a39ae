"""``blackbox.shaping``, the public short name of ``blackbox.strategies.shaping`` (a stub: ``blackbox._moved``).

Importing it gives the module ``blackbox.strategies.shaping`` itself (``bb.shaping``), without a warning.
"""

from blackbox._moved import alias

alias(__name__)
