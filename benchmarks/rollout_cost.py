"""Rollouts against the simulator's ceiling: environment steps per CPU-second, one worker.

    python benchmarks/rollout_cost.py [--envs HalfCheetah-v5 Hopper-v5 Humanoid-v5] [--rounds 25]
                                      [--steps 3000] [--popsize 64] [--slots N | --groups 1 2 4 8 16 65]
                                      [--no-replay] [--gymnasium-step] [--profile]

For each task, these contenders, each kept alive for the whole run (environments made once):

- **raw**: one ``gymnasium.make(ENV)`` stepped by ``env.step(action)`` on uniform random actions
  drawn beforehand, reset when an episode ends; nothing else. The ceiling the issue names.
- **replay linear / replay MLP**: the same raw loop replaying the very actions blackbox's policy
  took in 8 recorded episodes (same reset seeds, same actions: the same trajectories). The
  simulator's cost depends on what it simulates (HalfCheetah lying on its back near a policy's
  initial near-zero actions has more contacts than under uniform random actions), so this is the
  ceiling for the work our rollouts ask of it.
- **lockstep**: popsize + 1 such environments stepped in turn, one step each per pass, with
  nothing of ours: what stepping a whole generation side by side asks of the simulator and caches.
- **blackbox linear / MLP 64-64**: ``problem.evaluate`` of consecutive slices of a popsize + 1
  population (one episode per row, fresh seeds, observation normalization on with every row
  collecting statistics, the worst case), each slice as many rows as the engine has slots (its
  group size, measured at start-up or ``--slots``), until ``--steps`` steps were taken. With
  ``--groups``, one such contender per policy and forced group size (``linear@4``): where the
  curve of speed against group size peaks. MuJoCo's locomotion tasks are stepped by ``mj_step``
  directly (``direct``, blackbox/problems/gym/mujoco_slots.py: gymnasium's step bit for bit, without
  its per-step Python); ``--gymnasium-step`` adds the same contenders stepped through gymnasium's
  ``env.step`` (``linear gymnasium-step``, ``direct=False``).

The machine this runs on is shared, and a loop's speed drifts by +-25% from one second to the
next, so one long run per contender says little. Instead: many short PAIRED rounds; each round runs
the contenders back to back in a freshly shuffled order, each for about ``--steps`` steps, in
CPU seconds of this process. Each round gives ratios of the contenders' rates measured within
seconds of each other; the table prints the median of those per-round ratios to raw, to the replay
of the same policy's actions and to lockstep with their interquartile range (q25-q75), the median
rates with the best round's (the least CPU time per step), and the load average at start and end.
``--profile`` adds a cProfile of the MLP loop on the first task, grouped (simulator, gymnasium,
policy, observation statistics, normalizer, rest).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one worker is one core: no BLAS threads

import argparse  # noqa: E402
import cProfile  # noqa: E402
import functools  # noqa: E402
import pstats  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import blackbox as bb  # noqa: E402
from blackbox.problems.gym.environment import make_gym_env  # noqa: E402


def _actions(env, count: int, seed: int) -> np.ndarray:
    space = env.action_space
    return np.random.default_rng(seed).uniform(space.low, space.high, (count, *space.shape)).astype(space.dtype)


class Raw:
    """One ``gymnasium.make`` environment stepped on uniform random actions; kept between rounds."""

    def __init__(self, env_id: str, seed: int):
        self.env = make_gym_env(env_id)  # gymnasium.make, its default wrappers, MuJoCo's warning silenced
        self.actions = _actions(self.env, 4096, seed)
        self.env.reset(seed=seed)
        self.k = 0

    def run(self, steps: int) -> float:
        """Steps per CPU-second of ``steps`` ``env.step`` calls."""
        env, actions, n = self.env, self.actions, len(self.actions)
        k = self.k
        started = time.process_time()
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(actions[k % n])
            k += 1
            if terminated or truncated:
                env.reset()
        elapsed = time.process_time() - started
        self.k = k
        return steps / elapsed

    def close(self) -> None:
        self.env.close()


class Lockstep:
    """``envs`` environments stepped in turn, one step each per pass; kept between rounds."""

    def __init__(self, env_id: str, envs: int, seed: int):
        self.envs = [make_gym_env(env_id) for _ in range(envs)]
        self.actions = _actions(self.envs[0], 64 * envs, seed).reshape(64, envs, -1)
        for i, env in enumerate(self.envs):
            env.reset(seed=seed + i)
        self.k = 0

    def run(self, steps: int) -> float:
        """Steps per CPU-second of at least ``steps`` steps (whole passes over the environments)."""
        made, actions = self.envs, self.actions
        passes = max(1, -(-steps // len(made)))
        k = self.k
        started = time.process_time()
        for _ in range(passes):
            row = actions[k % 64]
            for i, env in enumerate(made):
                _, _, terminated, truncated, _ = env.step(row[i])
                if terminated or truncated:
                    env.reset()
            k += 1
        elapsed = time.process_time() - started
        self.k = k
        return passes * len(made) / elapsed

    def close(self) -> None:
        for env in self.envs:
            env.close()


class Replay:
    """One ``gymnasium.make`` environment replaying the actions a blackbox policy took: the same
    resets (seeds) and the same actions, so the simulator does exactly the work of that policy's
    episodes (uniform random actions make HalfCheetah's simulator do other work, e.g. fewer
    contacts), with nothing of ours around it. Kept between rounds."""

    def __init__(self, env_id: str, ours: Ours, episodes: int = 8):
        from blackbox.problems.gym.rollout import rollout_episode
        from blackbox.problems.gym.slots import flatten_observation

        problem = ours.problem
        self.env = make_gym_env(env_id)

        class _Recorder:  # the environment, with every action it is given written down
            def __init__(self, env):
                self.env, self.actions = env, []

            def reset(self, seed=None):
                return self.env.reset(seed=seed)

            def step(self, action):
                self.actions.append(np.array(action, copy=True))
                return self.env.step(action)

        batch = problem.policy.batch(1)
        self.episodes: list[tuple[int, np.ndarray]] = []
        for row in range(min(episodes, len(ours.params))):
            recorder = _Recorder(self.env)
            batch.load(0, ours.params[row])
            seed = 500_000 + row
            rollout_episode(recorder, flatten_observation(problem.observation_space), batch, problem.adapter,
                            seed, problem.step_limit, problem._normalizer())
            self.episodes.append((seed, np.stack(recorder.actions)))
        self.episode, self.k = 0, 0
        self.env.reset(seed=self.episodes[0][0])

    def run(self, steps: int) -> float:
        """Steps per CPU-second of ``steps`` ``env.step`` calls through the recorded episodes in turn."""
        env, episodes = self.env, self.episodes
        e, k = self.episode, self.k
        seed, actions = episodes[e]
        started = time.process_time()
        for _ in range(steps):
            env.step(actions[k])
            k += 1
            if k == len(actions):  # the recorded episode ended here (terminated, truncated or the limit)
                e, k = (e + 1) % len(episodes), 0
                seed, actions = episodes[e]
                env.reset(seed=seed)
        elapsed = time.process_time() - started
        self.episode, self.k = e, k
        return steps / elapsed

    def close(self) -> None:
        self.env.close()


class Ours:
    """A gym problem and a population around its initial parameters (sigma 0.02)."""

    def __init__(self, env_id: str, policy: dict, popsize: int, slots: int | None = None):
        extra = {} if slots is None else {"slots": slots}
        self.problem = bb.make_problem("gym", env=env_id, obs_norm=True, obs_norm_prob=1.0, **policy, **extra)
        rng = np.random.default_rng(1)
        center = self.problem.initial_params(rng)
        self.params = center + 0.02 * rng.standard_normal((popsize + 1, self.problem.dim))
        self.params[-1] = center
        self.calls = 0
        self.row = 0
        self.generation(warm=True)  # warm-up: the engine (its group size measured), environments, caches
        self.group = int(self.problem.group_size or 1)

    def generation(self, warm: bool = False) -> tuple[int, float]:
        """One whole generation with fresh seeds: (steps, CPU seconds)."""
        self.calls += 1
        seeds = np.arange(len(self.params)) + 1000 * self.calls
        started = time.process_time()
        result = self.problem.evaluate(self.params[:4] if warm else self.params, seeds[:4] if warm else seeds)
        return int(np.sum(result.steps)), time.process_time() - started

    def run(self, steps: int) -> float:
        """Slices of ``group`` rows (every slot busy), fresh seeds, until ``steps`` steps; steps per CPU-second."""
        done, elapsed = 0, 0.0
        m = len(self.params)
        while done < steps:
            self.calls += 1
            index = (self.row + np.arange(self.group)) % m
            self.row = int(index[-1] + 1) % m
            seeds = index + 1000 * self.calls
            started = time.process_time()
            result = self.problem.evaluate(self.params[index], seeds)
            elapsed += time.process_time() - started
            done += int(np.sum(result.steps))
        return done / elapsed

    def close(self) -> None:
        self.problem.close()


POLICIES = {"linear": {"policy": "linear"}, "mlp": {}}


def measure(env_id: str, popsize: int, rounds: int, steps: int, slots: int | None = None,
            seed: int = 0, groups: list[int] | None = None, replay: bool = True,
            gymnasium_step: bool = False) -> dict:
    """``rounds`` paired rounds: every contender back to back in a shuffled order each round.

    Contenders: ``raw``, ``lockstep``, and per policy (``linear``, ``mlp``) blackbox at the group
    size measured or ``slots`` (named ``linear``), or at each forced size of ``groups`` (``linear@4``),
    and with ``replay`` the raw loop replaying that policy's actions (``replay linear``); with
    ``gymnasium_step`` blackbox through gymnasium's step too (``linear gymnasium-step``)."""
    loops: dict[str, Raw | Lockstep | Replay | Ours] = {
        "raw": Raw(env_id, seed), "lockstep": Lockstep(env_id, popsize + 1, seed)}
    for name, policy in POLICIES.items():
        made = ({f"{name}@{g}": Ours(env_id, policy, popsize, g) for g in groups} if groups
                else {name: Ours(env_id, policy, popsize, slots)})
        loops.update(made)
        if gymnasium_step:
            loops[f"{name} gymnasium-step"] = Ours(env_id, {**policy, "direct": False}, popsize, slots)
        if replay:
            loops[f"replay {name}"] = Replay(env_id, next(iter(made.values())))
    names = list(loops)
    order_rng = np.random.default_rng(seed)
    rates: dict[str, list[float]] = {k: [] for k in names}
    for _ in range(rounds):
        for k in order_rng.permutation(names):
            rates[str(k)].append(loops[str(k)].run(steps))
    group_of = {k: loop.group for k, loop in loops.items() if isinstance(loop, Ours)}
    for loop in loops.values():
        loop.close()
    return {"rates": {k: np.array(v) for k, v in rates.items()}, "groups": group_of}


def _quartiles(values: np.ndarray) -> tuple[float, float, float]:
    q25, q50, q75 = np.percentile(values, [25, 50, 75])
    return float(q50), float(q25), float(q75)


def _baselines(name: str, rates: dict[str, np.ndarray]) -> list[str]:
    """What ``name``'s rate is divided by: raw for every contender but raw; lockstep and the replay
    of the same policy's actions for blackbox."""
    if name == "raw":
        return []
    if name == "lockstep" or name.startswith("replay "):
        return ["raw"]
    policy = name.split("@")[0].split(" ")[0]
    return ["raw", "lockstep"] + ([f"replay {policy}"] if f"replay {policy}" in rates else [])


def summary(rates: dict[str, np.ndarray]) -> dict[str, tuple[float, float, float]]:
    """Median and interquartile range of the per-round ratios (``'linear/raw'``, ...)."""
    return {f"{k}/{base}": _quartiles(rates[k] / rates[base]) for k in rates for base in _baselines(k, rates)}


def profile(env_id: str, popsize: int, slots: int | None = None) -> None:
    """Where one whole MLP generation's time goes, by function groups (cProfile's own time)."""
    ours = Ours(env_id, {}, popsize, slots)
    profiler = cProfile.Profile()
    profiler.enable()
    steps, _ = ours.generation()
    profiler.disable()
    print(f"\none generation: {steps} steps, group {ours.group}")
    stats = pstats.Stats(profiler)
    groups = {"mj_step (MuJoCo)": 0.0, "MuJoCo env (gymnasium's Python)": 0.0, "gymnasium wrappers": 0.0,
              "policy forward": 0.0, "observation statistics": 0.0, "normalizer": 0.0, "actions": 0.0,
              "rollout loop and slots": 0.0, "other": 0.0}
    def group_of(path: str, name: str) -> str:
        if "mj_step" in name:
            return "mj_step (MuJoCo)"
        if "envs/mujoco" in path:
            return "MuJoCo env (gymnasium's Python)"
        if "gymnasium" in path:
            return "gymnasium wrappers"
        if "policies.py" in path:
            return "policy forward"
        if "obs_norm.py" in path:
            return "normalizer" if name in ("__call__", "into") else "observation statistics"
        if "actions.py" in path:
            return "actions"
        if "rollout.py" in path or "slots.py" in path:
            return "rollout loop and slots"
        return "other"

    total = 0.0
    for (path, _, name), (_, _, tottime, _, callers) in stats.stats.items():  # type: ignore[attr-defined]
        total += tottime
        if path == "~" and "mj_step" not in name and callers:  # a builtin (numpy...): charged to its callers
            for (cpath, _, cname), caller in callers.items():
                groups[group_of(cpath, cname)] += caller[2]
        else:
            groups[group_of(path, name)] += tottime
    print(f"\nprofile of the MLP loop on {env_id} (cProfile own time, {total:.2f} s under the profiler; "
          f"builtins such as numpy's are charged to the Python function that called them):")
    for key, seconds in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"  {key:34s} {seconds / total:6.1%}")
    print("  top 12 functions by own time:")
    stats.sort_stats("tottime").print_stats(12)


class _StandIn:
    """An environment that costs nothing: the same observation every step, reward 0.5, never done."""

    def __init__(self, observation: np.ndarray):
        self.observation = observation

    def reset(self, seed=None):
        return self.observation, {}

    def step(self, action):
        return self.observation, 0.5, False, False, {}

    def close(self) -> None:
        """Nothing to release."""


def engine_cost(env_id: str, groups: list[int], steps: int = 300, repeats: int = 15) -> dict[tuple[str, int], float]:
    """CPU seconds the rollout engine itself spends per environment step (policy forward, actions,
    normalizer, observation statistics, slot bookkeeping, the slots' Python loop) at each group
    size: the real engine on environments that cost nothing, least of ``repeats`` runs."""
    from blackbox.problems.gym.rollout import BatchedRollouts
    from blackbox.problems.gym.slots import GymSlots

    out = {}
    for name, policy in POLICIES.items():
        problem = bb.make_problem("gym", env=env_id, obs_norm=True, obs_norm_prob=1.0, slots=1, **policy)
        normalizer = problem._normalizer()
        observation = np.linspace(-1.0, 1.0, problem.obs_size)
        for g in groups:
            slots = GymSlots(functools.partial(_StandIn, observation), g, problem.observation_space)
            engine = BatchedRollouts(slots, problem.policy, problem.adapter, problem.obs_size, steps)
            params = np.tile(problem.initial_params(np.random.default_rng(0)), (g, 1))
            best = float("inf")
            for _ in range(repeats):
                started = time.thread_time()
                engine.run(params, np.arange(g)[:, None], collect=np.ones(g, dtype=bool), normalizer=normalizer)
                best = min(best, (time.thread_time() - started) / (steps * g))
            out[(name, g)] = best
        problem.close()
    return out


def _commit() -> str:
    """The checkout's commit (with ``+`` when it has uncommitted changes), or ``unknown``."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+" if dirty else "")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["HalfCheetah-v5", "Hopper-v5", "Humanoid-v5"])
    parser.add_argument("--popsize", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--slots", type=int, default=None, help="the engine's group size (default: measured)")
    parser.add_argument("--groups", type=int, nargs="+", default=None,
                        help="forced group sizes, one blackbox contender per policy and size (e.g. 1 2 4 8 16 65)")
    parser.add_argument("--no-replay", dest="replay", action="store_false",
                        help="leave out the raw loops replaying each policy's actions")
    parser.add_argument("--gymnasium-step", action="store_true",
                        help="add blackbox contenders stepped through gymnasium's env.step (direct=False)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--engine", action="store_true",
                        help="only the engine's own CPU time per environment step at each group size "
                             "(--groups, default 1 2 4 8 16 64), on environments that cost nothing")
    args = parser.parse_args(argv)
    if args.engine:
        sizes = args.groups or [1, 2, 4, 8, 16, 64]
        print(f"commit {_commit()}; load average at start: {_load()}; the engine's own CPU time per environment "
              "step (us), least of 15 runs of 300 steps, observation statistics and normalizer on")
        print("| task | policy | " + " | ".join(f"group {g}" for g in sizes) + " |")
        print("|---|---|" + "---|" * len(sizes))
        for env_id in args.envs:
            cost = engine_cost(env_id, sizes)
            for name in POLICIES:
                print(f"| {env_id} | {name} | " + " | ".join(f"{cost[(name, g)] * 1e6:.2f}" for g in sizes) + " |",
                      flush=True)
        return 0
    print(f"popsize {args.popsize} + center, 1 process, obs_norm on (every row collects); {args.rounds} paired "
          f"rounds of about {args.steps} steps per contender (blackbox: slices of as many rows as it has slots), "
          f"the contenders in a shuffled order each round; steps per CPU-second (process time); "
          f"ratios: median of the per-round ratios [q25-q75]")
    print(f"commit {_commit()}; load average at start: {_load()} on {os.cpu_count()} CPUs", flush=True)
    print("| task | contender | group | steps/CPU-s, median (best round) | / raw | / replay (same actions) | / lockstep |")
    print("|---|---|---|---|---|---|---|")
    for env_id in args.envs:
        m = measure(env_id, args.popsize, args.rounds, args.steps, args.slots, groups=args.groups,
                    replay=args.replay, gymnasium_step=args.gymnasium_step)
        rates = m["rates"]
        ratios = summary(rates)
        for k in rates:
            cells = []
            for base in ("raw", "replay", "lockstep"):
                key = next((r for r in ratios if r.startswith(f"{k}/") and r.split("/", 1)[1].startswith(base)), None)
                cells.append("" if key is None else "{:.2f}x [{:.2f}-{:.2f}]".format(*ratios[key]))
            group = m["groups"].get(k, args.popsize + 1 if k == "lockstep" else 1)
            rate = f"{float(np.median(rates[k])):,.0f} ({float(np.max(rates[k])):,.0f})"
            print(f"| {env_id} | {k} | {group} | {rate} | {' | '.join(cells)} |", flush=True)
        print(f"load average after {env_id}: {_load()}", flush=True)
    print(f"load average at end: {_load()}")
    if args.profile:
        profile(args.envs[0], args.popsize, args.slots)
    return 0


if __name__ == "__main__":
    sys.exit(main())
