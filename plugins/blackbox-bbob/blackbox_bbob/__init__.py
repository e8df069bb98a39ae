"""blackbox-bbob: the BBOB suite of COCO (coco-experiment) as a blackbox problem plugin (``bbob``).

    import blackbox as bb
    problem = bb.make_problem("bbob:function=8,dim=10,instance=3")   # or "bbob:rosenbrock,dim=10"
"""

from .problem import BBOB, FUNCTIONS

__all__ = ["BBOB", "FUNCTIONS"]
__version__ = "0.1.0"
