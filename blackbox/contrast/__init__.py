"""0.1.0's ``blackbox.contrast``, moved in 0.2.0 (a stub package: ``blackbox._moved``).

Importing it warns; its names are those of ``blackbox.lab.contrast`` (the same objects), and its
0.1.0 submodules (``backprop``, ``curves``, ``es``, ``plot``, ``report``, ``runner``) are the modules of that package.
"""

from blackbox._moved import forward_package

__getattr__ = forward_package(__name__)
