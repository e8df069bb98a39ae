"""MNIST (and scikit-learn's digits) classification as a black-box problem."""

from ..._moved import forward_names

# blackbox.problems.mnist was a module in 0.1.0; its names live in .problem now.
__getattr__ = forward_names(__name__, dict.fromkeys(("MNIST", "FITNESS", "FORWARDS"), "blackbox.problems.mnist.problem"))
