"""Count a walk: the files one value passes through, from the command line to the call that uses it.

    python tools/walk_count.py gym        # --problem gym:Pendulum-v1 to gymnasium.make
    python tools/walk_count.py sigma      # --set sigma=0.0371 to the arithmetic (Population.row_into)
    python tools/walk_count.py sigma --before blackbox/strategies  # ... its resolve part only
    python tools/walk_count.py gym --show # ... and the walk itself, one stay a line
    python tools/walk_count.py --follow Pendulum-v1 --until gymnasium:make -- run --problem gym:Pendulum-v1 ...

The method, so that a walk can be recounted after a refactor with the same rules:

1. The command (``blackbox ARGS``, the walks' own: ``run --problem gym:Pendulum-v1 --strategy ars
   --set sigma=0.0371 --generations 1``) runs in this process under ``sys.settrace``, from
   ``blackbox.cli.main(ARGS)`` until the first call of the target function (``--until``, a
   ``module:qualname`` whose code object is compared; ``gymnasium.make``, or
   ``blackbox.core.population:Population.row_into`` where ``sigma`` first meets the noise: the
   first row an executor builds; ``Population.rows`` is not called before the first evaluation
   any more). ``--before PREFIX`` counts only the stays before the first one in a file whose
   path starts with ``PREFIX`` (``blackbox/strategies``: the resolve part of the sigma walk, from
   the command line to the strategy's constructor). There the
   trace stops (nothing after the target counts); the command runs to its end, then the counts are
   printed and the process ends (``os._exit``).
2. Only frames that run code of a file under ``blackbox/`` are looked at, module bodies (imports)
   left out. Every executed line of such a frame is one *step* of the walk if the frame *holds* the
   followed value at that line: one of its local variables (arguments included, ``self`` too) is
   the value or reaches it in at most three steps, each step an item of a tuple, list, set or dict,
   a field of a dataclass or an attribute of an object (``resolved.strategy.options["sigma"]``:
   three steps; ``--depth N`` allows N + 1). The value is
   a string when the followed text is not a number (held by any string that contains it:
   ``"gym:Pendulum-v1"``, ``"Pendulum-v1"``), else a number (held by an equal int or float, not a
   bool, or by a string that contains the text, as the command line's ``sigma=0.0371``).
3. The steps' files, in order, are cut into *stays*: a stay is a run of consecutive steps in one
   file. ``files`` is the number of distinct files, ``returns`` the stays that enter a file the
   walk had already left (so ``returns = stays - files``), and ``entries`` per file how many stays
   it has. The target's own file (outside ``blackbox/``) is not counted.
4. A function called again from a frame that already called it (a loop: ``check_options`` asking
   ``Component.located`` once per option) is walked once, its later calls not traced.

Issue 26 gave the walks of its head as 37 stays in 17 files with 20 returns (gym) and 30 stays, 16
files, 14 returns (sigma), by a call-graph walk that "follows one parameter", without the rules.
These rules are this tool's reading of that method. At ``ca0bdd0`` they count the gym walk as 46
stays in 16 files with 30 returns (``registry/options.py`` entered 8 times), and the sigma walk,
which runs on through the driver to the first generation's rows, as 93 stays, 26 files, 67 returns.
Compare a refactor with this tool on both sides (same command, same rules), not with the issue's
figures.

At ``6574cd5`` (before issue 26's resolve pass): gym 46 stays, 16 files, 30 returns
(``registry/options.py`` entered 8 times); sigma to ``Population.row_into`` 118 stays, 32 files,
86 returns, of which the resolve part (``--before blackbox/strategies``) 34 stays, 11 files, 23
returns. After the one resolve pass (``registry/options.py:resolve``): gym 30 stays, 16 files, 14
returns (``registry/options.py`` entered 3 times); sigma 102 stays, 30 files, 72 returns (the rest
runs through the driver and the kernel), its resolve part 20 stays, 10 files, 10 returns. The
whole sigma walk varies by a stay or two from run to run (what the run directory's lock and
fingerprint hold).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "blackbox"

#: The command both walks run (the sigma walk runs one generation of it; the gym walk stops before).
COMMAND = ["run", "--problem", "gym:Pendulum-v1", "--strategy", "ars", "--set", "sigma=0.0371",
           "--generations", "1", "--quiet", "--no-plot"]
WALKS = {
    "gym": ("Pendulum-v1", "gymnasium:make"),
    "sigma": ("0.0371", "blackbox.core.population:Population.row_into"),
}
DEPTH = 2


def target_code(spec: str) -> CodeType:
    """The code object of ``module:qualname`` (a function or a method)."""
    module_name, _, qualname = spec.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj.__code__


class Needle:
    """What holding the followed value means (rule 2 of the module docstring)."""

    def __init__(self, text: str, depth: int = DEPTH):
        self.text, self.depth = text, depth
        try:
            self.number: float | None = float(text)
        except ValueError:
            self.number = None

    def held(self, value: Any, depth: int | None = None, seen: set[int] | None = None) -> bool:
        depth = self.depth if depth is None else depth
        if isinstance(value, str):
            return self.text in value
        if self.number is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
            return value == self.number
        if depth < 0 or value is None or isinstance(value, (bytes, bool, int, float, complex, type)):
            return False
        seen = set() if seen is None else seen
        if id(value) in seen:
            return False
        seen.add(id(value))
        for child in _children(value):
            if self.held(child, depth - 1, seen):
                return True
        return False


def _children(value: Any) -> list[Any]:
    """The items of a container, the fields of a dataclass, the attributes of an object."""
    if isinstance(value, dict):
        return [*value.keys(), *value.values()]
    if isinstance(value, (tuple, list, set, frozenset)):
        return list(value)
    if type(value).__module__ in ("numpy", "builtins") or callable(value) and not hasattr(value, "__dict__"):
        return []
    if dataclasses.is_dataclass(value):
        return [getattr(value, f.name, None) for f in dataclasses.fields(value)]
    out = list(getattr(value, "__dict__", {}).values()) if hasattr(value, "__dict__") else []
    for cls in type(value).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if isinstance(name, str) and hasattr(value, name):
                out.append(getattr(value, name))
    return out


class Walk:
    """The trace: steps in ``blackbox/`` frames that hold the value, until the target is called."""

    def __init__(self, needle: Needle, target: CodeType):
        self.needle, self.target = needle, target
        self.files: list[str] = []  # one entry per stay
        self.lines: list[str] = []  # where each stay began (file:line function)
        self.reached = False
        # (caller frame, callee code) already walked; the frames are kept, so that no id is reused
        self._walked: set[tuple[FrameType | None, CodeType]] = set()

    def _ours(self, code: CodeType) -> bool:
        return code.co_filename.startswith(str(PACKAGE)) and code.co_name != "<module>"

    def tracer(self, frame: FrameType, event: str, arg: Any) -> Any:
        if self.reached:
            return None
        if event == "call" and frame.f_code is self.target:
            self.reached = True
            sys.settrace(None)
            return None
        if not self._ours(frame.f_code):
            return None
        call = (frame.f_back, frame.f_code)
        if call in self._walked:
            return None  # called again from the same running frame (a loop): walked once
        self._walked.add(call)
        self.step(frame)
        return self.local

    def local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if self.reached:
            return None
        if event == "line":
            self.step(frame)
        return self.local

    def step(self, frame: FrameType) -> None:
        if not any(self.needle.held(value) for value in frame.f_locals.values()):
            return
        name = str(Path(frame.f_code.co_filename).relative_to(ROOT))
        if not self.files or self.files[-1] != name:
            self.files.append(name)
            self.lines.append(f"{name}:{frame.f_lineno} {frame.f_code.co_name}")

    def cut(self, prefix: str) -> None:
        """Keep only the stays before the first one in a file whose path starts with ``prefix``."""
        at = next((i for i, name in enumerate(self.files) if name.startswith(prefix)), len(self.files))
        del self.files[at:], self.lines[at:]

    def counts(self) -> dict[str, Any]:
        distinct = list(dict.fromkeys(self.files))
        return {"stays": len(self.files), "files": len(distinct), "returns": len(self.files) - len(distinct),
                "entries": dict(Counter(self.files).most_common()), "reached": self.reached}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--follow", help="the text (or number) to follow")
    parser.add_argument("--until", help="module:qualname of the target function")
    parser.add_argument("--depth", type=int, default=DEPTH,
                        help=f"levels of items and attributes searched inside a local variable (default {DEPTH})")
    parser.add_argument("--show", action="store_true", help="print each stay (file:line function)")
    parser.add_argument("--before", metavar="PREFIX",
                        help="count only the stays before the first in a file under PREFIX (blackbox/strategies)")
    parser.add_argument("words", nargs="*", help=f"a walk ({', '.join(WALKS)}), or -- and a blackbox command line")
    args = parser.parse_args(argv)
    if args.follow is None and len(args.words) == 1 and args.words[0] in WALKS:
        follow, until = WALKS[args.words[0]]
        command = COMMAND
    elif args.follow and args.until and args.words:
        follow, until, command = args.follow, args.until, args.words
    else:
        parser.error(f"name a walk ({', '.join(WALKS)}) or give --follow, --until and a command after --")
    if command[0] == "run" and "--out" not in command:
        command = [*command, "--out", str(Path(tempfile.mkdtemp(prefix="walk-")) / "run")]

    sys.path.insert(0, str(ROOT))
    from blackbox.cli import main as blackbox_main

    walk = Walk(Needle(follow, args.depth), target_code(until))
    sys.settrace(walk.tracer)
    try:
        status = blackbox_main(command)
    finally:
        sys.settrace(None)
    if args.before:
        walk.cut(args.before)
    result = walk.counts()
    print(f"walk: {follow!r} from `blackbox {' '.join(command)}` to {until}"
          + (f", before {args.before}" if args.before else ""))
    print(f"stays: {result['stays']}  files: {result['files']}  returns: {result['returns']}  "
          f"reached: {result['reached']}")
    for name, count in result["entries"].items():
        print(f"  {count:3d}  {name}")
    if args.show:
        for i, line in enumerate(walk.lines, 1):
            print(f"{i:4d}  {line}")
    sys.stdout.flush()
    if walk.reached:
        os._exit(0)  # the rest of the command is not part of the walk
    print(f"the target was never called (exit status {status})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
