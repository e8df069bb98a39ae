"""``blackbox play``: load a trained policy, run episodes, print the returns, record a GIF or MP4.

    blackbox play runs/cartpole --episodes 10 --gif          # writes runs/cartpole/play-seed0.gif
    blackbox play runs/cartpole --checkpoint runs/cartpole/checkpoints/gen-000050 --video run.mp4
    blackbox play runs/cartpole/checkpoints/gen-000050

The problem (environment, policy, options) is rebuilt from the run's ``config.toml``. Parameters
come from ``solution.npz`` (the final ``center`` by default, ``--params best`` for the best row
seen) or from a checkpoint of the run (``--checkpoint``, or a checkpoint folder given in place of
the run directory; its run directory is the nearest parent holding ``config.toml``), verified as
``blackbox resume`` verifies it. The problem state (observation statistics) comes with the
parameters. Files are read with numpy and JSON, never with pickle. ``--gif`` / ``--video`` without
a path write into the run directory. Only the frames kept (``--every``) are rendered, and the
recording reports its progress on stderr: rendering a MuJoCo frame costs far more than a step.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.live import Live
from rich.text import Text

from ..config.toml import load_toml
from ..core.problem import Playable, Problem, Scorable
from ..errors import CheckpointError, ConfigError
from ..files import ensure_folder, load_npz, to_plain

__all__ = ["add_parser", "play", "load_run_config", "load_policy", "load_policy_file", "find_run_dir"]

#: ``--gif`` / ``--video`` given without a path: the file goes into the run directory.
_IN_RUN_DIR = Path("\0run-dir")

_PARAM_KEYS = {"center": ("center", "strategy/center", "strategy.center"),
               "best": ("best_params", "run/best_params", "run.best_params")}


def add_parser(sub) -> None:
    parser = sub.add_parser("play", help="run a trained policy: print returns, record a GIF or MP4")
    parser.add_argument("run_dir", type=Path, help="run directory of `blackbox run` (or a checkpoint folder in it)")
    parser.add_argument("--checkpoint", type=Path,
                        help="load parameters from this checkpoint folder (or a solution .npz) instead of solution.npz")
    parser.add_argument("--params", choices=("center", "best"), default="center",
                        help="which parameters: the final center (default) or the best row seen")
    parser.add_argument("--episodes", type=int, default=5, help="episodes to run (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the episodes (default 0)")
    parser.add_argument("--gif", type=Path, nargs="?", const=_IN_RUN_DIR,
                        help="write the first episode as an animated GIF (no path: RUN/play-seed<seed>.gif)")
    parser.add_argument("--video", type=Path, nargs="?", const=_IN_RUN_DIR,
                        help="write the first episode as a video (.mp4, needs imageio-ffmpeg; no path: "
                             "RUN/play-seed<seed>.mp4)")
    parser.add_argument("--fps", type=float, default=30.0, help="frames per second of the recording")
    parser.add_argument("--every", type=int, default=1, help="record every k-th frame (smaller files)")
    parser.add_argument("--json", action="store_true", help="print the returns as one JSON object")
    parser.set_defaults(func=play)


def load_policy(source: Path, which: str = "center") -> tuple[np.ndarray, dict[str, Any]]:
    """Parameters and problem state from a checkpoint folder (or its arrays.npz) or a solution .npz."""
    source = Path(source)
    folder = source if source.is_dir() else source.parent if source.name in ("arrays.npz", "state.json") else None
    if folder is None:
        return load_policy_file(source, which)
    from ..store.checkpoint import load_checkpoint

    checkpoint = load_checkpoint(folder)
    params = checkpoint.center if which == "center" else checkpoint.best_params
    return params, dict(checkpoint.state.get("problem") or {})


def find_run_dir(path: Path) -> Path:
    """``path`` if it is a run directory, else the nearest parent of a file that holds config.toml."""
    path = Path(path)
    if path.is_dir() and not (path / "config.toml").exists() and (path / "state.json").exists():
        path = path / "state.json"  # a checkpoint folder: its run directory is above it
    if path.is_dir():
        if not (path / "config.toml").exists():
            raise ConfigError(f"{path} is not a run directory of `blackbox run` (no config.toml)")
        return path
    if not path.exists():
        raise ConfigError(f"{path} does not exist; give a run directory written by `blackbox run`")
    for parent in path.resolve().parents:
        if (parent / "config.toml").exists():
            return parent
    raise ConfigError(f"no config.toml found above {path}; give the run directory as well (--checkpoint FILE)")


def load_run_config(run_dir: Path) -> dict[str, Any]:
    """The run's config.toml as plain data, read by the config package's TOML reader (a FIFO, a
    device or a file over the size limit is refused before it is read)."""
    path = Path(run_dir) / "config.toml"
    if not path.exists():
        raise ConfigError(f"{path} does not exist; is {run_dir} a run directory of `blackbox run`?")
    return load_toml(path).data


def load_policy_file(path: Path, which: str = "center") -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Parameters (``which``: center or best) and problem state from a solution or checkpoint .npz."""
    arrays = load_npz(path)
    params = next((arrays[key] for key in _PARAM_KEYS[which] if key in arrays), None)
    if params is None:
        suffix = "/" + _PARAM_KEYS[which][0]
        params = next((arrays[k] for k in sorted(arrays) if k.endswith(suffix)), None)
    if params is None:
        raise CheckpointError(
            f"{path} holds no {which} parameters (looked for {', '.join(_PARAM_KEYS[which])}); "
            f"it has: {', '.join(sorted(arrays)) or 'nothing'}"
        )
    state = {}
    for key, value in arrays.items():
        for prefix in ("problem/", "problem."):
            if key.startswith(prefix):
                state[key[len(prefix):]] = value
    return np.asarray(params, dtype=np.float64).reshape(-1), state


def build_problem(config: dict[str, Any]) -> Problem:
    from ..registry.plugins import make_problem

    options = dict(config.get("problem") or {})
    name = options.pop("name", None)
    if not name:
        raise ConfigError("config.toml has no [problem] name")
    return make_problem(name, **options)


def write_gif(path: Path, frames: list, fps: float) -> None:
    """An animated GIF with one palette for all frames (quantizing each frame anew is ~30x slower)."""
    from PIL import Image

    images = [Image.fromarray(np.asarray(frame, dtype=np.uint8)) for frame in frames]
    # The palette comes from a strip of frames spread over the episode, so late colors are in it.
    sample = images[:: max(1, len(images) // 8)]
    strip = Image.new("RGB", (sample[0].width, sample[0].height * len(sample)))
    for i, image in enumerate(sample):
        strip.paste(image, (0, i * image.height))
    palette = strip.quantize(colors=255)
    paletted = [image.quantize(palette=palette, dither=Image.Dither.NONE) for image in images]
    paletted[0].save(path, save_all=True, append_images=paletted[1:], duration=max(1, round(1000.0 / fps)),
                     loop=0, optimize=False)


def write_recording(path: Path, frames: list, fps: float) -> None:
    """``frames`` (RGB arrays) as a GIF (Pillow) or a video through imageio (imageio-ffmpeg)."""
    if not frames:
        raise ConfigError("nothing to record: the environment rendered no frames")
    ensure_folder(path.parent, "folder of the recording")
    if path.suffix.lower() == ".gif":
        write_gif(path, frames, fps)
        return
    import imageio.v3 as iio

    try:
        iio.imwrite(path, np.stack(frames), fps=fps, macro_block_size=1)
    except Exception as exc:  # noqa: BLE001 - imageio reports a missing backend in several ways
        raise ConfigError(
            f"could not write {path}: {type(exc).__name__}: {exc}; videos need imageio-ffmpeg "
            f'(pip install "blackbox-es[gym]"), or record a .gif instead'
        ) from None


class Recording(list[np.ndarray]):
    """The frames of the recorded episode, telling on stderr how far the recording got."""

    def __init__(self, console: Console | None, every: int, limit: int | None):
        super().__init__()
        self.console, self.every, self.limit = console, every, limit
        self.started = self.shown = time.perf_counter()
        self.live: Live | None = None
        if console is not None and console.is_terminal:
            self.live = Live(Text("recording ..."), console=console, auto_refresh=False, transient=True)
            self.live.start()

    def append(self, frame: np.ndarray) -> None:
        super().append(frame)
        now = time.perf_counter()
        if self.console is not None and now - self.shown >= (0.2 if self.live is not None else 10.0):
            self.shown = now
            self._show(self.status())

    def status(self) -> str:
        step = (len(self) - 1) * self.every
        of = f" of at most {self.limit}" if self.limit else ""
        return (f"recording: {len(self)} frames rendered (one every {self.every} steps), step {step}{of}, "
                f"{time.perf_counter() - self.started:.0f} s")

    def _show(self, line: str) -> None:
        if self.live is not None:
            self.live.update(Text(line), refresh=True)
        elif self.console is not None:
            self.console.out(line, highlight=False)

    def done(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def _play(problem: Playable, params: np.ndarray, seed: int, frames: Recording, every: int) -> tuple[float, int]:
    """One recorded episode, rendering only the frames kept (a ``play`` without ``every`` renders all)."""
    if "every" in inspect.signature(problem.play).parameters:
        return problem.play(params, seed=seed, render_mode="rgb_array", frames=frames, every=every)
    rendered: list[np.ndarray] = []
    result = problem.play(params, seed=seed, render_mode="rgb_array", frames=rendered)
    for frame in rendered[::every]:
        frames.append(frame)
    return result


def play(args) -> int:
    # pygame (classic-control rendering into arrays) needs no sound device, nor a display when none is set
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        os.environ.setdefault("MUJOCO_GL", "egl")  # MuJoCo renders off-screen through EGL (or set osmesa)
    if args.episodes < 1:
        raise ConfigError(f"--episodes must be >= 1, got {args.episodes}")
    if args.every < 1:
        raise ConfigError(f"--every must be >= 1, got {args.every}")
    run_dir = find_run_dir(args.run_dir)
    given_checkpoint = args.run_dir != run_dir and not (Path(args.run_dir) / "config.toml").exists()
    source = args.checkpoint or (args.run_dir if given_checkpoint else run_dir / "solution.npz")
    config = load_run_config(run_dir)
    problem = build_problem(config)
    if not isinstance(problem, Playable) or not isinstance(problem, Scorable):
        raise ConfigError(f"problem {config['problem'].get('name')!r} has nothing to play (only Gymnasium tasks do)")
    params, state = load_policy(source, args.params)
    if len(params) != problem.dim:
        raise CheckpointError(f"{source} holds {len(params)} parameters, but the run's problem takes {problem.dim}")
    if state:
        problem.load_state_dict(state)
    console = None if args.json else Console(stderr=True)
    if console is not None:
        console.print(f"playing {args.episodes} episode{'s' if args.episodes > 1 else ''} of {problem.env_id} ...",
                      soft_wrap=True, highlight=False)
    returns = problem.score(params, args.episodes, args.seed)
    recorded = None
    outputs = [(run_dir / f"play-seed{args.seed}{suffix}") if path == _IN_RUN_DIR else path
               for path, suffix in ((args.gif, ".gif"), (args.video, ".mp4")) if path is not None]
    if outputs:
        frames = Recording(console, args.every, getattr(problem, "step_limit", None))
        try:
            recorded = _play(problem, params, args.seed, frames, args.every)
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - rendering back ends fail in many ways
            raise ConfigError(
                f"could not render {problem.env_id}: {type(exc).__name__}: {exc} (MuJoCo on a machine without "
                f"a display renders through MUJOCO_GL=egl, the default here, or MUJOCO_GL=osmesa)"
            ) from None
        finally:
            frames.done()
        for path in outputs:
            write_recording(path, frames, args.fps)
    summary = {"run_dir": str(run_dir), "parameters": str(source), "which": args.params, "env": problem.env_id,
               "seed": args.seed, "returns": returns, "mean": float(np.mean(returns)),
               "std": float(np.std(returns)), "min": float(np.min(returns)), "max": float(np.max(returns))}
    if recorded is not None:
        summary["recorded"] = {"return": recorded[0], "steps": recorded[1],
                               "files": [str(p) for p in outputs]}
    if args.json:
        print(json.dumps(to_plain(summary)))
        return 0
    print(f"{problem.env_id}: {args.episodes} episodes of the {args.params} parameters from {source}")
    for i, value in enumerate(returns):
        print(f"  episode {i}: return {value:g}")
    print(f"  mean {summary['mean']:g}  std {summary['std']:g}  min {summary['min']:g}  max {summary['max']:g}")
    if recorded is not None:
        print(f"recorded episode 0 (return {recorded[0]:g}, {recorded[1]} steps) to "
              f"{', '.join(summary['recorded']['files'])}", file=sys.stdout)
    return 0
