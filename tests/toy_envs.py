"""A toy environment with a native vector form, for testing vector entry points.

``ToyWalk`` is a noisy 1-D walk: the action (in [-2, 2]) moves the position, the reward is
minus the distance to 0, the episode terminates beyond |x| > 3 and truncates itself after
``max_episode_steps``; ``info["success"]`` is set while |x| < 0.2. ``ToyWalkVector`` steps
``num_envs`` of them with numpy, seeded and reset exactly as ``SyncVectorEnv`` would seed
and reset the single ones, in all three autoreset modes.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

ACTION = gym.spaces.Box(np.float32(-2.0), np.float32(2.0), (1,), np.float32)
OBSERVATION = gym.spaces.Box(-np.inf, np.inf, (2,), np.float64)


def _dynamics(x, action, rng_normals):
    return x + 0.5 * np.clip(action, -2.0, 2.0) + 0.1 * rng_normals


class ToyWalk(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, max_episode_steps: int = 30) -> None:
        self.observation_space, self.action_space = OBSERVATION, ACTION
        self.max_episode_steps = max_episode_steps

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = float(self.np_random.uniform(-1, 1)), 0
        return np.array([self.x, 0.0]), {}

    def step(self, action):
        self.x = float(_dynamics(self.x, float(np.asarray(action)[0]), self.np_random.normal()))
        self.t += 1
        terminated = abs(self.x) > 3
        truncated = not terminated and self.t >= self.max_episode_steps
        obs = np.array([self.x, self.t / self.max_episode_steps])
        return obs, -abs(self.x), terminated, truncated, {"success": abs(self.x) < 0.2}


class ToyWalkVector(gym.vector.VectorEnv):
    def __init__(self, num_envs: int, max_episode_steps: int = 30,
                 autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP) -> None:  # fmt: skip
        self.num_envs, self.max_episode_steps = num_envs, max_episode_steps
        self.metadata = {"autoreset_mode": AutoresetMode(autoreset_mode)}
        self.single_observation_space, self.single_action_space = OBSERVATION, ACTION
        self.observation_space = batch_space(OBSERVATION, num_envs)
        self.action_space = batch_space(ACTION, num_envs)
        self.rngs = [seeding.np_random()[0] for _ in range(num_envs)]
        self.x, self.t = np.zeros(num_envs), np.zeros(num_envs, int)
        self.pending = np.zeros(num_envs, bool)

    def _reset_one(self, i: int, seed: int | None = None) -> None:
        if seed is not None:
            self.rngs[i] = seeding.np_random(seed)[0]
        self.x[i], self.t[i], self.pending[i] = self.rngs[i].uniform(-1, 1), 0, False

    def _obs(self) -> np.ndarray:
        return np.stack([self.x, self.t / self.max_episode_steps], axis=1)

    def reset(self, *, seed=None, options=None):
        mask = (options or {}).get("reset_mask", np.ones(self.num_envs, bool))
        for i in np.flatnonzero(mask):
            self._reset_one(int(i), None if seed is None else seed + int(i))
        return self._obs(), {}

    def step(self, actions):
        mode = self.metadata["autoreset_mode"]
        live = ~self.pending
        normals = np.array(
            [rng.normal() if ok else 0.0 for rng, ok in zip(self.rngs, live, strict=True)]
        )
        moves = np.asarray(actions, dtype=np.float64)[:, 0]
        self.x = np.where(live, _dynamics(self.x, moves, normals), self.x)
        self.t += live
        terminated = live & (np.abs(self.x) > 3)
        truncated = live & ~terminated & (self.t >= self.max_episode_steps)
        rewards = np.where(live, -np.abs(self.x), 0.0)
        success = np.abs(self.x) < 0.2
        info = {"success": success, "_success": np.ones(self.num_envs, bool)}
        for i in np.flatnonzero(self.pending):
            self._reset_one(i)
            info["success"][i] = False
        done = terminated | truncated
        if mode == AutoresetMode.SAME_STEP and done.any():
            final = [o if d else None for o, d in zip(self._obs(), done, strict=True)]
            info["final_obs"] = np.array(final, dtype=object)
            info["_final_obs"] = done.copy()
            info["final_info"] = {"success": success.copy(), "_success": done.copy()}
            info["_final_info"] = done.copy()
            for i in np.flatnonzero(done):
                self._reset_one(i)
                info["success"][i] = False
        elif mode == AutoresetMode.NEXT_STEP:
            self.pending = done.copy()
        return self._obs(), rewards, terminated, truncated, info


class ToyTextCounter(gym.Env):
    """A text game for wrapper tests: say "up" three times to win; "down" undoes one.

    ``info["admissible_commands"]`` lists "up", and "down" once the count is above 0.
    """

    metadata = {"render_modes": []}

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Text(max_length=64)
        self.action_space = gym.spaces.Text(max_length=16)
        self.count = 0

    def _out(self) -> tuple[str, dict]:
        commands = ["up"] + (["down"] if self.count else [])
        return f"count {self.count}\ngoal 3", {"admissible_commands": commands}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.count = 0
        return self._out()

    def step(self, action):
        self.count += {"up": 1, "down": -1}.get(str(action), 0)
        self.count = max(self.count, 0)
        obs, info = self._out()
        won = self.count >= 3
        return obs, float(won), won, False, {**info, "success": won}
