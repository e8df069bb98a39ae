"""MNIST (and scikit-learn's digits) classification as a black-box problem."""
