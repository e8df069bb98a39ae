"""0.1.0's ``blackbox.progress``, moved in 0.2.0 (a stub: ``blackbox._moved``).

Importing it gives the module ``blackbox.driver.progress`` itself, with a DeprecationWarning.
"""

from blackbox._moved import alias

alias(__name__)
