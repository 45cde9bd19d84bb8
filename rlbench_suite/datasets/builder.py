"""Build a dataset from source: roll out the card's policies on its env with seeded episodes.

Episode ``i`` (over the card's source policies, in order) is reset with seed
``card.build.seed + i`` (seeds from :data:`~rlbench_suite.core.seeds.DATASET_SEEDS`, clear of
every evaluation seed); its policy with :func:`~rlbench_suite.core.seeds.policy_seed` of it,
and its epsilon-random actions and Gaussian action noise come from streams derived from the
seed too. So an episode depends on its seed only, and a rebuild on the same package versions
gives the same content hash (and, with the same h5py, the same file bytes).
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.dataset_cards import (
    DATA_FILE,
    METADATA_FILE,
    DataFile,
    DatasetCard,
    SourcePolicy,
    dataset_card_paths,
)
from rlbench_suite.core.provenance import cpu_platform, package_versions
from rlbench_suite.core.seeds import EVALUATION_SEEDS, policy_seed
from rlbench_suite.datasets import h5encode
from rlbench_suite.datasets.cache import folder_lock
from rlbench_suite.datasets.hints import cpu_dependence
from rlbench_suite.datasets.joint import is_joint, joint_rollouts, joint_spaces, make_joint_env
from rlbench_suite.datasets.lockstep import EPSILON_STREAM, Block, lockstep_rollouts
from rlbench_suite.datasets.recorder import stack_values
from rlbench_suite.datasets.replay import ReplayStats
from rlbench_suite.datasets.storage import (
    Episode,
    content_hash,
    minari_metadata,
    write_episodes,
    write_metadata,
)
from rlbench_suite.policies.core import file_sha256

BUILD_VERSIONS = ("rlbench-suite", "gymnasium", "numpy", "h5py", "deflate", "mujoco", "pybullet",
                  "torch", "onnxruntime", "minigrid", "pettingzoo")  # fmt: skip
"""Packages whose versions a build records (the content hash is promised for these; h5py's
and deflate's, the libdeflate wrapper, also decide the file's bytes)."""
Progress = Callable[[int, int], None]
"""Called after every episode with ``(episodes done, steps done)``."""
NOISE_STREAM = 0x6A05
"""The second word of an episode's action-noise stream's seed (``[seed, NOISE_STREAM]``)."""
TEXT_RANDOM_POLICY = "module:rlbench_suite.envs.text.random_admissible:RandomAdmissible"
"""The random action of a Text action space: a uniform pick among the admissible commands."""


@dataclass(frozen=True)
class BuildOutput:
    """What a build wrote: the folder, counts, hashes and the card's new ``files``."""

    folder: Path
    episodes: int
    steps: int
    mean_return: float
    content_sha256: str
    files: list[DataFile]
    versions: dict[str, str]
    replay: ReplayStats | None = None
    """Of a training run's data: the run's steps and the recorded envs' (replay.py)."""
    cpu: str | None = None
    """The CPU it was built on (``core.provenance.cpu_platform``)."""


def episode_seeds(card: DatasetCard) -> list[int]:
    """The reset seed of every episode of ``card``'s policies, in order."""
    return card.reset_seeds


def _policy_for(component: SourcePolicy, env: gym.Env) -> Any:
    from rlbench_suite.policies import make_policy

    return make_policy(component.policy, env, deterministic=component.deterministic)


def play(
    env: gym.Env, policy: Any, seed: int, epsilon: float = 0.0,
    random_space: gym.Space | None = None, noise_std: np.ndarray | None = None,
) -> Episode:  # fmt: skip
    """One seeded episode of ``policy`` (each action first given Gaussian noise of
    ``noise_std`` and clipped to the bounds, see :func:`action_noise`; then replaced by a random
    one, see :func:`random_actions`, with probability ``epsilon``), recorded with its last next
    observation."""
    obs, info = env.reset(seed=seed)
    policy.reset(policy_seed(seed))
    stream = np.random.default_rng(np.random.SeedSequence([seed, EPSILON_STREAM]))
    explore = None
    if epsilon > 0:
        assert random_space is not None
        explore = random_actions(env, random_space, int(stream.integers(2**31)))
    noisy = None if noise_std is None else action_noise(env.action_space, noise_std, seed)
    observations, actions, rewards, terminations, truncations = [obs], [], [], [], []
    while True:
        action = policy.act(obs, info)
        if noisy is not None:
            action = noisy(action)
        if explore is not None and stream.random() < epsilon:
            action = explore(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        observations.append(obs)
        actions.append(action)
        rewards.append(reward)
        terminations.append(terminated)
        truncations.append(truncated)
        if terminated or truncated:
            break
    return Episode(
        observations=stack_values(observations, env.observation_space),
        actions=stack_values(actions, env.action_space),
        rewards=np.asarray(rewards, dtype=np.float64),
        terminations=np.asarray(terminations, dtype=bool),
        truncations=np.asarray(truncations, dtype=bool),
        seed=seed,
    )


class SourceError(ValueError):
    """A card's source that its env cannot play (noise on actions it does not fit)."""


def noise_scale(component: SourcePolicy, space: gym.Space, where: str = "") -> np.ndarray | None:
    """``component``'s ``noise_std`` as an array of the action's shape; None without noise.
    A :class:`SourceError` (prefixed with ``where``, the card and field) where noise does not
    apply: a non-Box action, or one std per dimension whose count is not the action's."""
    if not component.noisy:
        return None
    where = where or component.policy
    if not isinstance(space, gym.spaces.Box):
        raise SourceError(f"{where}.noise_std: Gaussian noise applies to Box actions only; "
                          f"this env's action space is {space} (remove noise_std, or use "
                          "epsilon)")  # fmt: skip
    std = np.asarray(component.noise_std, dtype=np.float64)
    if std.ndim == 1 and std.size != int(np.prod(space.shape)):
        raise SourceError(f"{where}.noise_std: {std.size} values; the action space {space} "
                          f"has {int(np.prod(space.shape))} dimensions (give one number, or "
                          "one per dimension)")  # fmt: skip
    return np.broadcast_to(std, (int(np.prod(space.shape)),)).reshape(space.shape)


def action_noise(space: gym.Space, std: np.ndarray, seed: int) -> Callable[[Any], Any]:
    """``action -> noisy action``: ``action + std * N(0, 1)`` (one draw per dimension, from the
    episode's noise stream ``[seed, NOISE_STREAM]``) clipped to ``space``'s bounds, in its
    dtype. ``std`` has the action's shape (:func:`noise_scale`)."""
    stream = np.random.default_rng(np.random.SeedSequence([seed, NOISE_STREAM]))

    def noisy(action: Any) -> np.ndarray:
        moved = np.asarray(action, dtype=np.float64) + std * stream.standard_normal(std.shape)
        return np.clip(moved, space.low, space.high).astype(space.dtype)

    return noisy


def random_actions(env: gym.Env, space: gym.Space, seed: int) -> Callable[[Any, dict], Any]:
    """``(obs, info) -> action``, the epsilon steps' random action, seeded with ``seed``: a
    uniform sample of ``space``; on a Text space (where a random string is almost never a
    command) a uniform pick among ``info["admissible_commands"]``
    (:data:`TEXT_RANDOM_POLICY`)."""
    if isinstance(space, gym.spaces.Text):
        from rlbench_suite.policies import make_policy

        return make_policy(TEXT_RANDOM_POLICY, env, seed=seed).act
    space.seed(seed)
    return lambda obs, info: space.sample()


def rollouts(card: DatasetCard, progress: Progress | None = None,
             lockstep: bool = True) -> Iterator[Episode]:  # fmt: skip
    """Every episode of ``card``'s source, in order (see the module doc for the seeds): all
    played together in lockstep where the env and the policies allow it
    (:mod:`~rlbench_suite.datasets.lockstep`, the same episodes), else one at a time; joint
    episodes of a multi-agent env (:mod:`~rlbench_suite.datasets.joint`)."""
    evaluation = set(get_card(card.env_id).evaluation.seeds)
    seeds = episode_seeds(card)
    for seed in seeds:
        if seed in evaluation or seed in EVALUATION_SEEDS:  # the schema guards it too
            raise ValueError(f"{card.id}: seed {seed} is an evaluation seed")
    parts = []  # (component, its seeds)
    for component in card.source.policies:
        parts.append((component, seeds[: component.episodes]))
        seeds = seeds[component.episodes :]
    done = steps = 0
    for episode in _episodes(card, parts, lockstep):
        done, steps = done + 1, steps + len(episode)
        if progress is not None:
            progress(done, steps)
        yield episode


def _episodes(card: DatasetCard, parts: list[tuple[SourcePolicy, list[int]]],
              lockstep: bool) -> Iterator[Episode]:  # fmt: skip
    if is_joint(card.env_id):
        if any(c.noisy for c, _ in parts):
            raise SourceError(f"{_where(card, 0)}.noise_std: Gaussian noise is for "
                              "single-agent Box actions; joint data takes epsilon only")
        yield from joint_rollouts(card.env_id, [(c.policy, s, c.epsilon) for c, s in parts])
        return
    env = gym.make(card.env_id)
    try:
        blocks = [Block(_policy_for(c, env), s, c.epsilon,
                        noise_scale(c, env.action_space, _where(card, i)))
                  for i, (c, s) in enumerate(parts)]  # fmt: skip
        played = lockstep_rollouts(env, blocks) if lockstep else None
        yield from played if played is not None else _one_at_a_time(env, blocks)
    finally:
        env.close()


def _where(card: DatasetCard, index: int) -> str:
    """``<card file or id>: source.policies[index]``, for an error about that entry."""
    return f"{dataset_card_paths().get(card.id, card.id)}: source.policies[{index}]"


def _one_at_a_time(env: gym.Env, blocks: list[Block]) -> Iterator[Episode]:
    for block in blocks:
        space = copy.deepcopy(env.action_space) if block.epsilon > 0 else None
        for seed in block.seeds:
            yield play(env, block.policy, seed, block.epsilon, space, block.noise_std)


def build_versions() -> dict[str, str]:
    """The installed versions of :data:`BUILD_VERSIONS` (those installed), in its order."""
    installed = package_versions()
    return {k: installed[k] for k in BUILD_VERSIONS if k in installed}


def _file_entry(folder: Path, relative: str) -> DataFile:
    path = folder / relative
    return DataFile(path=relative, sha256=file_sha256(path), size=path.stat().st_size)


class BuildMismatchError(ValueError):
    """A build's content hash differs from the expected one; the cached copy was kept."""


def build(card: DatasetCard, out: Path, progress: Progress | None = None,
          expect_content: str | None = None) -> BuildOutput:  # fmt: skip
    """Build ``card``'s dataset into the folder ``out``: built in a staging folder beside it,
    then (when ``expect_content`` is None or the content hash equals it) moved in place of
    ``out`` under the dataset's file lock. On a mismatch :class:`BuildMismatchError` is raised,
    ``out`` is left as it was and the staging folder is removed."""
    h5encode.compressor()  # the file's writer, imported first: a missing package stops it here
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    staging.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would keep a served cache private
    try:
        replay = None
        if card.source.training is not None:
            from rlbench_suite.datasets.replay import record_training

            episodes, replay = record_training(card, progress)
        else:
            episodes = list(rollouts(card, progress))
        if not episodes:
            raise ValueError(f"{card.id}: the build recorded no complete episode")
        (staging / DATA_FILE).parent.mkdir(parents=True)
        count, steps = write_episodes(staging / DATA_FILE, episodes)
        returns = [e.total_return for e in episodes]
        env, spec_json, spaces = _env_description(card.env_id)
        references = card.reference
        meta = minari_metadata(
            card.id, spec_json, *spaces, count, steps,
            {"algorithm_name": _source_name(card),
             "description": card.description, "code_permalink": card.build.command,
             "ref_min_score": references.random.value, "ref_max_score": references.expert.value},
        )  # fmt: skip
        env.close()
        write_metadata(staging / METADATA_FILE, meta)
        files = [_file_entry(staging, DATA_FILE), _file_entry(staging, METADATA_FILE)]
        digest = content_hash(episodes)
        if expect_content is not None and digest != expect_content:
            kept = "the cached copy was left as it was" if out.exists() else "nothing was cached"
            raise BuildMismatchError(
                f"{card.id}: the build's content hash {digest} differs from the card's "
                f"{expect_content} ({mismatch_cause(card)}); {kept}"
            )
        with folder_lock(out):
            _replace_folder(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    cpu = cpu_platform()
    return BuildOutput(out, count, steps, float(np.mean(returns)), digest, files,
                       build_versions(), replay, cpu)  # fmt: skip


def mismatch_cause(card: DatasetCard) -> str:
    """Why a build may not give ``card``'s content hash: the package versions that differ,
    and the CPU where the card's data depends on it (:func:`cpu_dependence`) or the card
    records another one."""
    here = build_versions()
    changed = [f"{name} {version} on the card, {here.get(name, 'none')} here"
               for name, version in card.build.versions.items() if here.get(name) != version]
    cause = ("package versions differ: " + ", ".join(changed) if changed
             else "the card's package versions")  # fmt: skip
    why, built = cpu_dependence(card), card.build.cpu
    if why is not None:
        return (f"{cause}; this is {why}: built on {built or 'a CPU the card does not record'}, "
                f"this machine is {cpu_platform()}; a mirror that has the files serves them "
                "(--remote URL)")  # fmt: skip
    if built not in (None, cpu_platform()):
        return f"{cause}; built on {built}, this machine is {cpu_platform()}"
    return cause


def _source_name(card: DatasetCard) -> str:
    """The data's source in a word or two (Minari's ``algorithm_name``)."""
    run = card.source.training
    if run is not None:
        return (f"{run.algo} training run ({run.hyperparams} hyperparameters, seed {run.seed}, "
                f"{run.budget} steps)")  # fmt: skip
    return ", ".join(p.policy for p in card.source.policies)


def _env_description(env_id: str) -> tuple[Any, str | None, tuple[gym.Space, gym.Space]]:
    """``(env, its spec as JSON or None, (observation space, action space))`` of a dataset
    of ``env_id`` (joint data: the Parallel env and Dicts over its agents)."""
    if is_joint(env_id):
        env = make_joint_env(env_id)
        return env, None, joint_spaces(env)
    env = gym.make(env_id)
    try:
        spec_json = env.spec.to_json() if env.spec is not None else None
    except (TypeError, ValueError):
        spec_json = None
    return env, spec_json, (env.observation_space, env.action_space)


def _umask() -> int:
    """The process's umask (read by setting it and back: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _replace_folder(new: Path, out: Path) -> None:
    """Put the folder ``new`` in place of ``out``: two renames (the old copy is moved aside
    first, and back if the second rename fails), then the old copy is removed."""
    if not out.exists():
        os.replace(new, out)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
    aside.rmdir()
    os.replace(out, aside)
    try:
        os.replace(new, out)
    except BaseException:
        os.replace(aside, out)
        raise
    shutil.rmtree(aside, ignore_errors=True)


def measure_returns(env_id: str, policy: str, seeds: list[int]) -> np.ndarray:
    """Episode returns of ``policy`` on ``env_id``, one seeded episode per seed (reset and
    policy seeding as the harness does): how a dataset's reference returns are measured.
    Of a joint env, every agent plays ``policy`` and the return is the agents' mean."""
    if is_joint(env_id):
        episodes = joint_rollouts(env_id, [(policy, seeds, 0.0)])
        return np.array([episode.total_return for episode in episodes])
    env = gym.make(env_id)
    try:
        agent = _policy_for(SourcePolicy(policy=policy, episodes=len(seeds)), env)
        return np.array([play(env, agent, seed).total_return for seed in seeds])
    finally:
        env.close()
