"""``blackbox.optim``, the public short name of ``blackbox.strategies.optim`` (a stub: ``blackbox._moved``).

Importing it gives the module ``blackbox.strategies.optim`` itself (``bb.optim``), without a warning.
"""

from blackbox._moved import alias

alias(__name__)
