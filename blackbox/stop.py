"""``blackbox.stop``, the public short name of ``blackbox.driver.stop`` (a stub: ``blackbox._moved``).

Importing it gives the module ``blackbox.driver.stop`` itself (``bb.stop``), without a warning.
"""

from blackbox._moved import alias

alias(__name__)
