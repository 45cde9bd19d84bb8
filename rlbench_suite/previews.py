"""What an environment looks like: a short GIF or a PNG of seeded play, or a transcript.

:func:`write_preview` plays the card's stack (``gym.make(card.id)``; for a multi-agent card
that is its agent's view of the PettingZoo game, the other agents playing the card's
opponents) under a fixed seed and a fixed policy: the card's expert reference policy where
it can be built here, else uniformly random actions. Environments with ``rgb_array`` frames
give a GIF (a few dozen frames, one small palette) or a PNG; the others (text games, matrix
games) give a transcript (``.txt``, or ``.md`` in a code block). The same arguments give the
same bytes wherever the renderer does. ``rlbench info ID --render PATH`` and the docs site
(``scripts/build_docs.py``) both call it, so the site shows what the command writes.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlbench_suite.core.cards import EnvCard
from rlbench_suite.core.catalog import as_card
from rlbench_suite.core.seeds import policy_seed
from rlbench_suite.preview_camera import tracking_camera
from rlbench_suite.refscores import reference_policy
from rlbench_suite.wrappers.stats import STATS_KEY

IMAGE_SUFFIXES = (".gif", ".png")
TRANSCRIPT_SUFFIXES = (".txt", ".md")
ACCEPTED = ".gif or .png (frames, for environments with rgb_array) or .txt or .md (a transcript)"


@dataclass(frozen=True)
class PreviewOptions:
    """How a preview is made; the defaults are the docs site's."""

    seed: int = 0
    policy: str | None = None
    """A ``--policy`` string; None: the card's expert reference policy, else random."""
    frames: int = 36
    """GIF frames, spread evenly over the steps played (all of them when fewer)."""
    width: int | None = None
    """Pixels; None: 200 for a GIF, 480 for a PNG (smaller frames are enlarged by a whole
    factor only)."""
    colors: int = 48
    """The GIF's palette, shared by every frame."""
    min_steps: int = 36
    """Short episodes are followed by the next seeds' until this many steps are played."""
    max_steps: int = 360
    transcript_steps: int = 15


MAX_EPISODES = 8
"""A play follows at most this many episodes (seeds ``seed`` to ``seed + 7``)."""
MIN_DISTINCT_FRAMES = 6
"""A GIF whose play shows fewer differing frames is made from the next seeds' play (the
one with the most, of :data:`SEED_TRIES`): a policy stuck on one seed moves on another."""
SEED_TRIES = 4


@dataclass
class Preview:
    """What :func:`write_preview` wrote, and how."""

    env_id: str
    path: Path
    kind: str
    """``gif``, ``png`` or ``transcript``."""
    policy: str
    seed: int
    steps: int
    frames: int = 0
    size: tuple[int, int] | None = None
    """(width, height) of an image."""
    notes: list[str] = field(default_factory=list)
    observation_space: str = ""
    action_space: str = ""
    """The spaces of the env played (a multi-agent card's: its agent's)."""

    @property
    def bytes(self) -> int:
        return self.path.stat().st_size

    def record(self) -> dict[str, Any]:
        """How it was made, for a preview folder's manifest."""
        return {"kind": self.kind, "policy": self.policy, "seed": self.seed,
                "steps": self.steps, "frames": self.frames,
                "size": list(self.size) if self.size else None, "bytes": self.bytes,
                "notes": self.notes, "observation_space": self.observation_space,
                "action_space": self.action_space}  # fmt: skip

    def summary(self) -> str:
        """One line for the terminal."""
        what = (f"{self.frames} frame{'s' * (self.frames != 1)}, {self.size[0]}x{self.size[1]}"
                if self.size else f"{self.steps} steps")  # fmt: skip
        return (f"wrote {self.path} ({what}, {self.bytes / 1024:.1f} KB): {self.env_id}, policy "
                f"{self.policy}, seed {self.seed}")  # fmt: skip


PER_DIMENSION = 12
"""Boxes of at most this many dimensions with differing bounds list them one by one."""


def _number(value: float) -> str:
    return "inf" if value == np.inf else "-inf" if value == -np.inf else f"{float(value):.4g}"


def _box_bounds(low: np.ndarray, high: np.ndarray) -> str:
    """A Box's bounds: one pair where every dimension shares it, the pairs of a small Box
    whose dimensions differ, else the range they span (said as such)."""
    if np.all(low == low.flat[0]) and np.all(high == high.flat[0]):
        return f"bounds=[{_number(low.flat[0])}, {_number(high.flat[0])}]"
    if low.size <= PER_DIMENSION:
        pairs = ", ".join(
            f"[{_number(a)}, {_number(b)}]" for a, b in zip(low.flat, high.flat, strict=True)
        )
        return f"bounds per dimension: {pairs}"
    return (f"bounds differ per dimension, within [{_number(np.min(low))}, "
            f"{_number(np.max(high))}]")  # fmt: skip


def describe_space(space: gym.Space) -> str:
    """A one-line description of a space (Box bounds and Text charsets summarized)."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        bounds = _box_bounds(space.low, space.high)
        return f"Box(shape={space.shape}, dtype={space.dtype}, {bounds})"
    if isinstance(space, spaces.Text):
        return (f"Text(min_length={space.min_length}, max_length={space.max_length}, "
                f"{len(space.character_set)} characters)")  # fmt: skip
    return " ".join(str(space).split())


def render_modes(card: EnvCard) -> list[str]:
    """The render modes the card's environment declares (an env is built, not reset)."""
    env = gym.make(card.id)
    try:
        return list(env.metadata.get("render_modes") or [])
    finally:
        env.close()


def has_frames(card: EnvCard) -> bool:
    """Whether the card's environment renders ``rgb_array`` frames."""
    return card.family != "text" and "rgb_array" in render_modes(card)


def default_policy(card: EnvCard) -> str:
    """The card's expert reference policy where there is one, else ``random``."""
    expert = card.reference.expert
    return expert.policy if expert is not None else "random"


def team_policy(card: EnvCard, options: PreviewOptions) -> str | None:
    """The policy a cooperative card's other agents play in its preview: the card's expert,
    as the agent does, where the card names no partners (``gym.make`` gives them random
    actions: QuadSwarm's three other drones crashed and the formation never showed); None
    for every other card, and where a policy is asked for."""
    spec = default_policy(card)
    cooperative = card.is_multiagent and "cooperative" in card.tags and card.opponents is None
    return spec if cooperative and options.policy is None and spec != "random" else None


def check_preview_path(path: str | Path, card: EnvCard | None = None) -> str:
    """The suffix of ``path`` in lower case; ValueError unless it is one of :data:`ACCEPTED`
    and, given ``card``, one it can give (no ``rgb_array`` frames: no image), naming what it
    can give."""
    suffix = Path(path).suffix.lower()
    if suffix not in IMAGE_SUFFIXES + TRANSCRIPT_SUFFIXES:
        raise ValueError(f"cannot write {Path(path).name!r}: accepted are {ACCEPTED}")
    if card is not None and suffix in IMAGE_SUFFIXES and not has_frames(card):
        modes = ", ".join(render_modes(card)) or "none"
        raise ValueError(
            f"{card.id} renders no rgb_array frames (its render modes: {modes}), so it has no "
            f"{suffix} picture; write a transcript instead: a .txt or .md path"
        )
    return suffix


def write_preview(
    card: EnvCard | str, path: str | Path, options: PreviewOptions | None = None
) -> Preview:
    """Write ``path`` (its suffix picks what: see :data:`ACCEPTED`); ValueError if the card
    cannot give that (no ``rgb_array`` frames for an image), naming what it can give."""
    card = as_card(card)
    options = options or PreviewOptions()
    path = Path(path)
    suffix = check_preview_path(path, card)
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix in IMAGE_SUFFIXES:
        return _write_image(card, path, options)
    return _write_transcript(card, path, options)


def _make(card: EnvCard, options: PreviewOptions, **kwargs: Any) -> tuple[gym.Env, Any, Preview]:
    """The env, the policy, and the preview's record so far (its policy, spaces, notes)."""
    team = team_policy(card, options)
    spec, notes = options.policy or default_policy(card), []
    try:
        env = gym.make(card.id, **kwargs, **({"opponents": team} if team else {}))
        policy = reference_policy(env, spec)
    except (ImportError, FileNotFoundError) as exc:
        if options.policy is not None:
            raise ValueError(f"cannot build policy {spec!r} for {card.id}: {exc}") from None
        notes.append(f"the expert {spec!r} cannot be built here ({exc}); random actions")
        team, env = None, gym.make(card.id, **kwargs)
        spec, policy = "random", reference_policy(env, "random")
    if team:
        notes.append(f"every agent plays {team} (a cooperative team; through gym.make the "
                     f"other agents act at random)")  # fmt: skip
    record = Preview(card.id, Path(), "", spec, options.seed, 0, notes=notes,
                     observation_space=describe_space(env.observation_space),
                     action_space=describe_space(env.action_space))  # fmt: skip
    return env, policy, record


def _play(env: gym.Env, policy: Any, options: PreviewOptions, on_step: Any) -> int:
    """Play seeded episodes (seed, seed + 1, ...) until ``min_steps`` are played or
    ``max_steps`` reached; ``on_step(t, env)`` after each reset and step. Steps played."""
    t, episode = 0, 0
    while t < options.min_steps and episode < MAX_EPISODES:
        seed = options.seed + episode
        obs, info = env.reset(seed=seed)
        policy.reset(policy_seed(seed))
        on_step(t, env)
        done = False
        while not done and t < options.max_steps:
            obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
            done = terminated or truncated
            t += 1
            on_step(t, env)
        episode += 1
        if not done:
            break
    return t


def _headless_sdl() -> None:
    """Off-screen frames need no display: without one, SDL (pygame's renderers) gets its dummy
    video driver instead of printing "error: XDG_RUNTIME_DIR is invalid" while it looks for one."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


def _write_image(card: EnvCard, path: Path, options: PreviewOptions) -> Preview:
    from PIL import Image

    gif = path.suffix.lower() == ".gif"
    _headless_sdl()
    camera = tracking_camera(card)
    env, policy, record = _make(card, options, render_mode="rgb_array",
                                **({"camera_name": camera} if camera else {}))  # fmt: skip
    width = options.width or (200 if gif else 480)
    try:
        best: _Shot | None = None
        for attempt in range(SEED_TRIES if gif else 1):
            seed = options.seed + attempt * MAX_EPISODES
            shot = _shoot(env, policy, replace(options, seed=seed), width, gif)
            if best is None or shot.distinct > best.distinct:
                best = shot
            if best.distinct >= MIN_DISTINCT_FRAMES:
                break
        fps = float(env.metadata.get("render_fps") or 30)
    finally:
        env.close()
    images = best.images
    if gif:
        step_ms = 1000 * (best.steps / max(len(images) - 1, 1)) / fps
        _save_gif(images, path, options.colors, step_ms)
    else:
        images[0].save(path, optimize=True)
    with Image.open(path) as written:  # a GIF merges identical successive frames
        count = getattr(written, "n_frames", 1)
    notes = record.notes + ([f"rendered by the model's tracking camera {camera!r}"] if camera
                            else [])  # fmt: skip
    return replace(record, path=path, kind="gif" if gif else "png", seed=best.seed,
                   steps=best.steps, frames=count, size=images[0].size, notes=notes)  # fmt: skip


@dataclass
class _Shot:
    """The frames of one seeded play, scaled: the steps they span, how many differ."""

    seed: int
    steps: int
    images: list[Any]

    @property
    def distinct(self) -> int:
        return len({image.tobytes() for image in self.images})


def _shoot(env: gym.Env, policy: Any, options: PreviewOptions, width: int, gif: bool) -> _Shot:
    """Frames of the play from ``options.seed`` spread over its steps; where the picture stops
    showing anything new early (drones settled in their hover, a stuck agent, a stand-off),
    spread again over the steps up to that point, while that gives more frames (rendering
    is the slow part, so a first play without frames counts the steps)."""
    from PIL import Image

    end = _play(env, policy, options, lambda t, e: None)
    wanted = _frame_steps(end, options.frames if gif else 1)
    while True:
        shots: list[tuple[int, np.ndarray]] = []

        def shoot(t: int, e: gym.Env, wanted: set[int] = wanted,
                  shots: list = shots) -> None:  # fmt: skip
            if t in wanted:
                shots.append((t, e.render()))

        _play(env, policy, options, shoot)
        if not shots:
            raise ValueError(f"{env.spec.id if env.spec else env} rendered no frame")
        images = [_scaled(Image.fromarray(np.asarray(f, dtype=np.uint8)), width) for _, f in shots]
        shot = _Shot(options.seed, end, images)
        settled = shots[_settled_from([image.tobytes() for image in images])][0]
        if not gif or shot.distinct >= MIN_DISTINCT_FRAMES or settled >= end or settled < 1:
            return shot
        closer = _frame_steps(settled, options.frames)
        if len(closer) <= len({t for t in wanted if t <= settled}):
            return shot
        end, wanted = settled, closer


def _settled_from(frames: list[bytes]) -> int:
    """The index of the first frame after which every frame repeats an earlier one (the last
    index when the last frame is new)."""
    seen: set[bytes] = set()
    last_new = 0
    for i, frame in enumerate(frames):
        if frame not in seen:
            seen.add(frame)
            last_new = i
    return min(last_new + 1, len(frames) - 1)


def _frame_steps(total: int, frames: int) -> set[int]:
    """``frames`` step indices spread over 0..total (one: the middle one)."""
    if frames == 1:
        return {total // 2}
    if total < frames:
        return set(range(total + 1))
    return {round(i * total / (frames - 1)) for i in range(frames)}


def _scaled(image: Any, width: int) -> Any:
    from PIL import Image

    factor = round(width / image.width)
    if factor >= 2:  # small pixel art: whole-number enlargement (the nearest), sharp edges
        size = (image.width * factor, image.height * factor)
        return image.convert("RGB").resize(size, Image.Resampling.NEAREST)
    if image.width <= width:
        return image.convert("RGB")
    height = max(1, round(image.height * width / image.width))
    return image.convert("RGB").resize((width, height), Image.Resampling.BOX)


def _save_gif(images: list[Any], path: Path, colors: int, step_ms: float) -> None:
    """One palette for every frame (from a strip of them), no dithering: small and stable."""
    from PIL import Image

    sample = images[:: max(1, len(images) // 8)]
    strip = Image.new("RGB", (images[0].width, images[0].height * len(sample)))
    for i, image in enumerate(sample):
        strip.paste(image, (0, i * images[0].height))
    palette = strip.quantize(colors=colors, method=Image.Quantize.MEDIANCUT)
    quantized = [im.quantize(palette=palette, dither=Image.Dither.NONE) for im in images]
    duration = int(min(max(10 * math.ceil(step_ms / 10), 40), 200))
    durations = [duration] * (len(quantized) - 1) + [1200]  # hold the last frame
    quantized[0].save(path, save_all=True, append_images=quantized[1:], duration=durations,
                      loop=0, optimize=False, disposal=1)  # fmt: skip


def _write_transcript(card: EnvCard, path: Path, options: PreviewOptions) -> Preview:
    env, policy, record = _make(card, options)
    lines = [f"{card.id}: seed {options.seed}, policy {record.policy}"]
    lines += [f"({note})" for note in record.notes]
    steps = 0
    try:
        obs, info = env.reset(seed=options.seed)
        policy.reset(policy_seed(options.seed))
        lines += [f"--- reset(seed={options.seed})", *_show(obs, info)]
        total = 0.0
        names = action_names(env)
        for steps in range(1, options.transcript_steps + 1):
            action = policy.act(obs, info)
            obs, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            named = _text(action) + (f" ({names[int(action)]})" if names else "")
            lines += [f"--- step {steps}: action {named} -> reward {_number(reward)}",
                      *_show(obs, info)]  # fmt: skip
            if terminated or truncated:
                stats = info.get(STATS_KEY) or {}
                end = "terminated" if terminated else "truncated"
                lines.append(f"--- the episode ended ({end}) after {steps} steps: return "
                             f"{_number(total)}, success {stats.get('success')}")  # fmt: skip
                break
        else:
            lines.append(f"--- (stopped after {steps} steps; return so far {_number(total)})")
    finally:
        env.close()
    text = "\n".join(line.rstrip() for line in lines) + "\n"
    if path.suffix.lower() == ".md":
        fence = "`" * max(3, _longest_backtick_run(text) + 1)
        text = f"# {card.id}: a transcript\n\n{fence}text\n{text}{fence}\n"
    path.write_text(text, encoding="utf-8")
    return replace(record, path=path, kind="transcript", steps=steps)


def action_names(env: gym.Env) -> list[str] | None:
    """The names of a Discrete action space's actions where the env (or, behind a multi-agent
    card's view, its game) declares them as ``action_names``, and they say more than the
    numbers; else None."""
    inner = env.unwrapped
    game = getattr(inner, "env", None)
    for candidate in (inner, getattr(game, "unwrapped", game)):
        names = [str(n) for n in getattr(candidate, "action_names", None) or []]
        if names and len(names) == getattr(env.action_space, "n", None):
            return None if names == [str(i) for i in range(len(names))] else names
    return None


def _longest_backtick_run(text: str) -> int:
    best = current = 0
    for char in text:
        current = current + 1 if char == "`" else 0
        best = max(best, current)
    return best


def _number(value: Any) -> str:
    return f"{float(value):.4g}"


def _text(value: Any, limit: int = 200) -> str:
    """A compact one-line rendering of an action or an info value."""
    if isinstance(value, np.ndarray):
        text = np.array2string(value, precision=3, separator=", ", threshold=24,
                               max_line_width=10_000)  # fmt: skip
    elif isinstance(value, np.generic):
        text = repr(value.item())
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{k}: {_text(v, 60)}" for k, v in value.items()) + "}"
    else:
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _show(obs: Any, info: dict[str, Any]) -> list[str]:
    """The observation (text as it is, arrays compactly) and the short info entries."""
    lines = obs.splitlines() if isinstance(obs, str) else [f"observation: {_text(obs, 400)}"]
    shown = {k: v for k, v in info.items() if k != STATS_KEY and _short(v)}
    if shown:
        lines.append("info: " + ", ".join(f"{k}={_text(v, 80)}" for k, v in shown.items()))
    return lines


def _short(value: Any) -> bool:
    return isinstance(value, bool | int | float | np.generic) or (
        isinstance(value, str) and len(value) <= 80
    )


# A folder of previews (the docs site's ``docs/previews/``) with a manifest saying how each
# was made, so only the stale ones are made again.

PREVIEW_VERSION = 1
"""Raise when a change of this module changes what it writes: every preview becomes stale."""
MANIFEST = "manifest.json"


def preview_key(card: EnvCard) -> dict[str, Any]:
    """What a folder's preview of ``card`` depends on: the registered spec, the policy asked
    for (the card's expert or random) and the SHA-256 of its file where it names one (a policy
    trained again under the same name plays otherwise), this module's version, the camera where
    a model camera is used, and the team's policy where the other agents play one
    (:func:`team_policy`)."""
    from rlbench_suite.policies.core import file_sha256
    from rlbench_suite.policies.specs import artifact_of
    from rlbench_suite.registry import spec_hash

    policy = default_policy(card)
    key = {"spec_hash": spec_hash(card), "policy_asked": policy, "version": PREVIEW_VERSION}
    try:
        artifact = artifact_of(policy)
    except ValueError:
        artifact = None
    if artifact is not None and artifact.is_file():
        key["policy_sha256"] = file_sha256(artifact)
    camera, team = tracking_camera(card), team_policy(card, PreviewOptions())
    return key | ({"camera": camera} if camera else {}) | ({"team": team} if team else {})


def load_manifest(folder: str | Path) -> dict[str, dict[str, Any]]:
    """The manifest of a preview folder: id -> how its preview was made (empty if none)."""
    path = Path(folder) / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def stale_previews(folder: str | Path, selected: list[EnvCard]) -> dict[str, str]:
    """The cards of ``selected`` whose preview in ``folder`` is missing or stale: id -> why."""
    folder, manifest, stale = Path(folder), load_manifest(folder), {}
    for card in selected:
        entry = manifest.get(card.id)
        if entry is None or not (folder / entry["file"]).is_file():
            stale[card.id] = "no preview"
            continue
        changed = [k for k, v in preview_key(card).items() if entry.get(k) != v]
        if changed:
            stale[card.id] = f"changed: {', '.join(changed)}"
    return stale


def refresh_previews(
    folder: str | Path, selected: list[EnvCard], *, force: bool = False, on_card: Any = None
) -> list[Preview]:
    """Make the previews of ``selected`` in ``folder`` that are missing or stale (all with
    ``force``): a GIF for envs with frames, else a transcript, named after the card
    (``CartPole-v1.gif``); the manifest is saved after each, so an interrupted run keeps them.
    ``on_card(card)`` is called before each."""
    folder = Path(folder)
    stale = {c.id for c in selected} if force else set(stale_previews(folder, selected))
    made = []
    for card in (c for c in selected if c.id in stale):
        if on_card is not None:
            on_card(card)
        path = folder / f"{card.name}{'.gif' if has_frames(card) else '.txt'}"
        preview = write_preview(card, path)
        manifest = load_manifest(folder)
        old = manifest.get(card.id, {}).get("file")
        if old and old != path.name:
            (folder / old).unlink(missing_ok=True)
        manifest[card.id] = {"file": path.name, **preview_key(card), **preview.record()}
        _write_json(folder / MANIFEST, manifest)
        made.append(preview)
    return made


def _write_json(path: Path, data: Any) -> None:
    """Write ``data`` whole or not at all (a temporary file renamed over it)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
