"""Problems shipped to workers keep their code's file names (executors/shipping.py)."""

from __future__ import annotations

import pickle

import cloudpickle

from blackbox.executors import shipping


def test_code_pickled_by_value_keeps_its_file_name_and_still_runs():
    namespace: dict = {"__name__": "__main__"}  # a __main__ function: cloudpickle ships it by value
    exec(compile("def scaled(x):\n    return 3 * x\n", "/somewhere/user_problem.py", "exec"), namespace)
    restored = pickle.loads(shipping.dumps(namespace["scaled"]))
    assert restored(2) == 6
    assert restored.__code__.co_filename == "/somewhere/user_problem.py"
    plain = pickle.loads(cloudpickle.dumps(namespace["scaled"]))  # what cloudpickle alone keeps
    assert plain(2) == 6 and plain.__code__.co_filename in ("/somewhere/user_problem.py", "<dynamic-code>")
