"""0.1.0's ``blackbox.problem``, moved in 0.2.0 (a stub: ``blackbox._moved``).

Importing it gives the module ``blackbox.core.problem`` itself, with a DeprecationWarning.
"""

from blackbox._moved import alias

alias(__name__)
