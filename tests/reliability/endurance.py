"""A long run, as ``blackbox run`` makes it, with a probe of the processes' resources.

``python -m tests.reliability.endurance RUN_DIR SAMPLES.jsonl EVERY -- KEY=VALUE...`` resolves a run config from the
``--set``-style pairs (``strategy=...``, ``problem=...``, ``executor=...``, ``generations=...``,
any config key) and runs it into RUN_DIR through :func:`blackbox.lab.runs.start_run` (what
``blackbox run`` calls) with checkpoints and record files, plus a callback that every EVERY
generations appends to SAMPLES.jsonl, read from /proc: the driver's and every child process's
resident memory (anonymous, file-backed and shared parts), open file descriptors and threads.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from blackbox.config.run import RunConfig, component_override, resolve_run_config, set_override, set_value
from blackbox.driver.loop import Callback
from blackbox.lab.runs import start_run
from blackbox.registry.spec import parse_value
from tests.reliability.helpers import descendants


def _status(pid: int) -> dict[str, int]:
    """VmRSS, RssAnon, RssFile, RssShmem (bytes) and Threads from /proc/PID/status."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
            out[key] = int(value.split()[0]) * 1024
        elif key == "Threads":
            out[key] = int(value)
    return out


def _children(pid: int) -> list[int]:
    return sorted(descendants(pid))


def sample(pid: int) -> dict:
    """Resources of ``pid`` and of each process below it."""
    def one(p: int) -> dict:
        cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        return {"pid": p, "fds": len(os.listdir(f"/proc/{p}/fd")), "cmd": cmd[:80], **_status(p)}

    children = []
    for child in _children(pid):
        try:
            children.append(one(child))
        except OSError:
            continue  # ended meanwhile
    return {"driver": one(pid), "children": children}


class Probe(Callback):
    def __init__(self, path: Path, every: int):
        self.path, self.every = Path(path), int(every)

    def on_generation(self, run, record) -> None:
        if record.generation % self.every == 0 or record.generation == 1:
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"generation": record.generation, "time": record.time,
                                         **sample(os.getpid())}) + "\n")


def main(argv: list[str]) -> int:
    out, samples, every, _, *pairs = argv
    config = RunConfig()
    for pair in pairs:
        key, _, text = pair.partition("=")
        value = parse_value(text)
        if key in ("strategy", "problem", "executor"):
            config.components[key] = component_override(key, config.components.get(key), text, key)
        elif key in ("generations", "max_time"):
            set_override(config, f"stop.{key}", value, key)
        elif key in ("seed", "evaluate_center", "preset"):
            set_value(config, (key,), value, key)
        else:
            set_override(config, key, value, key)
    resolved = resolve_run_config(config)
    summary = start_run(resolved, out, overwrite=True, callbacks=[Probe(Path(samples), int(every))])
    print(json.dumps({"generations": summary["generations"], "wall_time": summary["wall_time"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
