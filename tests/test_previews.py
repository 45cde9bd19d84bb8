"""Pictures and transcripts of environments: ``rlbench info ID --render PATH`` and
``rlbench_suite.previews`` (what the docs site shows)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import gymnasium
import numpy as np
import pytest

from rlbench_suite.core.catalog import get_card
from rlbench_suite.core.seeds import policy_seed
from rlbench_suite.previews import (
    MANIFEST,
    MAX_EPISODES,
    MIN_DISTINCT_FRAMES,
    PreviewOptions,
    load_manifest,
    preview_key,
    refresh_previews,
    stale_previews,
    team_policy,
    write_preview,
)
from rlbench_suite.refscores import reference_policy
from tests.conftest import run_cli

Image = pytest.importorskip("PIL.Image")
ROOT = Path(__file__).resolve().parents[1]


def _frames(path) -> list:
    from PIL import ImageSequence

    with Image.open(path) as image:
        return [frame.convert("RGB") for frame in ImageSequence.Iterator(image)]


def test_a_gif_of_seeded_play_is_small_moving_and_the_same_each_time(tmp_path):
    first = write_preview("rlbench/CartPole-v1", tmp_path / "a.gif")
    again = write_preview("rlbench/CartPole-v1", tmp_path / "b.gif")
    frames = _frames(first.path)
    assert len(frames) == first.frames >= 10  # identical successive frames are merged
    assert frames[0].size == first.size and first.size[0] <= 200
    assert len({frame.tobytes() for frame in frames}) > 5  # the cart moves
    assert first.policy == "baseline:CartPole-v1/ppo/seed-0"  # the card's expert
    assert first.bytes < 300_000
    assert first.path.read_bytes() == again.path.read_bytes()
    assert "Box(shape=(4,)" in first.observation_space and first.action_space == "Discrete(2)"


def test_a_png_is_one_frame_and_the_policy_and_seed_can_be_chosen(tmp_path):
    chosen = PreviewOptions(seed=3, policy="random")
    png = write_preview("rlbench/MiniGrid-Empty-5x5-v0", tmp_path / "grid.png", chosen)
    with Image.open(png.path) as image:
        assert image.format == "PNG" and image.size == png.size
        assert len(image.convert("RGB").getcolors(maxcolors=100_000)) > 3
    assert (png.policy, png.seed, png.frames) == ("random", 3, 1)
    other = write_preview("rlbench/MiniGrid-Empty-5x5-v0", tmp_path / "b.png",
                          PreviewOptions(seed=4, policy="random"))  # fmt: skip
    assert other.path.read_bytes() != png.path.read_bytes()


def test_a_multiagent_card_renders_its_game(tmp_path):
    preview = write_preview("rlbench/Duel-v0", tmp_path / "duel.gif")
    assert preview.frames >= 20 and preview.policy.endswith("duel.bots:HardBot")
    assert len({f.tobytes() for f in _frames(preview.path)}) > 5


def test_a_text_game_gets_a_transcript_of_its_expert(tmp_path):
    card = get_card("rlbench/TextMaze-v0")
    txt = write_preview(card, tmp_path / "maze.txt")
    text = txt.path.read_text()
    assert txt.kind == "transcript" and txt.policy == card.reference.expert.policy
    assert text.startswith("rlbench/TextMaze-v0: seed 0, policy module:")
    assert "--- reset(seed=0)" in text and "--- step 1: action '" in text
    assert "#######" in text  # the maze as the observation shows it
    assert "the episode ended (terminated)" in text and "success True" in text
    md = write_preview(card, tmp_path / "maze.md").path.read_text()
    assert md.startswith("# rlbench/TextMaze-v0: a transcript\n\n```text\n")
    assert text in md


def test_a_matrix_game_gets_a_transcript_of_its_rounds(tmp_path):
    preview = write_preview("rlbench/PrisonersDilemma-v0", tmp_path / "pd.txt")
    text = preview.path.read_text()
    assert text.count("--- step ") == preview.steps >= 2
    assert "observation: [" in text and "reward" in text
    # the game's action names beside the numbers (an ordinal game's are only numbers)
    assert "--- step 1: action 1 (defect) -> reward" in text  # the best response defects
    ordinal = write_preview("rlbench/MatrixGame-g017-v0", tmp_path / "g.txt").path.read_text()
    assert re.search(r"--- step 1: action \d -> reward", ordinal), ordinal


def test_what_cannot_be_written_is_refused_naming_what_is_accepted(tmp_path):
    with pytest.raises(ValueError, match=r"renders no rgb_array frames .* \.txt or \.md"):
        write_preview("rlbench/Wordle-v0", tmp_path / "w.gif")
    with pytest.raises(ValueError, match=r"accepted are \.gif or \.png .* \.txt or \.md"):
        write_preview("rlbench/CartPole-v1", tmp_path / "c.jpg")
    assert not list(tmp_path.iterdir())


def test_rlbench_info_render_writes_the_picture_and_says_where(tmp_path):
    out = tmp_path / "pendulum.gif"
    proc = run_cli("info", "rlbench/Pendulum-v1", "--render", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout and "policy baseline:Pendulum-v1/sac/seed-2" in proc.stdout
    same = write_preview("rlbench/Pendulum-v1", tmp_path / "p.gif")
    assert out.read_bytes() == same.path.read_bytes()
    for bad, said in (("nav.png", "write a transcript instead"),
                      ("nav.mp4", "accepted are .gif or .png")):  # fmt: skip
        proc = run_cli("info", "rlbench/TextNav-v0", "--render", str(tmp_path / bad))
        assert proc.returncode == 2 and said in proc.stderr
        assert proc.stdout == ""  # refused before the card's table, not after it
    proc = run_cli("info", "rlbench/CartPole-v1", "--render", str(tmp_path / "c.gif"),
                   "--policy", "randm")  # fmt: skip
    assert proc.returncode == 2 and "did you mean 'random'" in proc.stderr
    assert not (tmp_path / "c.gif").exists()


def test_a_preview_folder_makes_only_what_is_missing_or_stale(tmp_path):
    selected = [get_card("rlbench/CartPole-v1"), get_card("rlbench/Chicken-v0")]
    assert set(stale_previews(tmp_path, selected)) == {c.id for c in selected}
    made = refresh_previews(tmp_path, selected)
    assert sorted(p.path.name for p in made) == ["CartPole-v1.gif", "Chicken-v0.txt"]
    manifest = load_manifest(tmp_path)
    assert manifest["rlbench/Chicken-v0"]["kind"] == "transcript"
    assert manifest["rlbench/CartPole-v1"]["bytes"] == (tmp_path / "CartPole-v1.gif").stat().st_size
    assert stale_previews(tmp_path, selected) == {} and refresh_previews(tmp_path, selected) == []
    manifest["rlbench/CartPole-v1"]["spec_hash"] = "0" * 64  # as if the card had changed
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    assert stale_previews(tmp_path, selected) == {"rlbench/CartPole-v1": "changed: spec_hash"}
    key = preview_key(get_card("rlbench/CartPole-v1"))
    assert len(key["policy_sha256"]) == 64  # the expert is a baseline's file
    manifest["rlbench/CartPole-v1"] |= {**key, "policy_sha256": "1" * 64}  # trained again
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    assert stale_previews(tmp_path, selected) == {"rlbench/CartPole-v1": "changed: policy_sha256"}
    (tmp_path / "Chicken-v0.txt").unlink()
    assert stale_previews(tmp_path, selected)["rlbench/Chicken-v0"] == "no preview"
    assert [p.env_id for p in refresh_previews(tmp_path, selected)] == [c.id for c in selected]


def test_a_box_is_described_with_its_true_bounds():
    """The review saw CartPole's observation as bounds=[-inf, inf] (min of low, max of high)
    and MountainCar's velocity as [-1.2, 0.6]; dimensions that differ are listed."""
    import numpy as np
    from gymnasium import spaces

    from rlbench_suite.previews import describe_space

    high = np.array([4.8, np.inf, 0.41887903, np.inf], dtype=np.float32)
    cartpole = spaces.Box(-high, high)
    assert describe_space(cartpole) == (
        "Box(shape=(4,), dtype=float32, bounds per dimension: [-4.8, 4.8], [-inf, inf], "
        "[-0.4189, 0.4189], [-inf, inf])")  # fmt: skip
    assert describe_space(spaces.Box(-1.0, 1.0, (6,), np.float32)).endswith("bounds=[-1, 1])")
    wide = spaces.Box(np.zeros(20), np.arange(1.0, 21.0))
    assert describe_space(wide).endswith("bounds differ per dimension, within [0, 20])")


def test_every_env_with_frames_declares_its_frame_rate():
    """The GIF's pace comes from ``render_fps`` (Kitchen had none: 30 was assumed)."""
    import gymnasium as gym

    gifs = [i for i, e in load_manifest(ROOT / "docs" / "previews").items() if e["kind"] == "gif"]
    assert gifs
    for env_id in gifs:
        env = gym.make(env_id)
        try:
            assert env.metadata.get("render_fps", 0) > 0, env_id
        finally:
            env.close()


class _SettlesAt40(gymnasium.Env):
    """A 360-step episode whose picture (a square moving right) stops changing at step 40."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}
    observation_space = gymnasium.spaces.Box(np.zeros(1, np.float32), np.ones(1, np.float32))
    action_space = gymnasium.spaces.Discrete(1)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(1, np.float32), 0.0, False, self.t >= 360, {}

    def render(self):
        frame = np.full((20, 60, 3), 255, np.uint8)
        x = min(self.t, 40)
        frame[5:15, x:x + 10] = 0
        return frame


def test_a_play_that_settles_early_is_filmed_up_to_where_it_settles():
    """36 frames over 360 steps of a picture that settles at step 40 showed 5 pictures; the
    frames are spread again over the steps before the picture settles."""
    from rlbench_suite.previews import _shoot

    class Still:
        def reset(self, seed):
            pass

        def act(self, obs, info):
            return 0

    shot = _shoot(_SettlesAt40(), Still(), PreviewOptions(), 60, gif=True)
    assert shot.distinct >= MIN_DISTINCT_FRAMES and 40 <= shot.steps < 60


def _drone_pixels(frame) -> int:
    """Pixels of a quadrotor in a PyBullet frame: its red arms and dark body (the floor is
    white and light blue)."""
    a = np.asarray(frame.convert("RGB")).astype(int)
    red = (a[..., 0] > 120) & (a[..., 1] < 90) & (a[..., 2] < 90)
    return int((red | (a.sum(-1) < 150)).sum())


def test_the_swarm_is_framed_close_and_crashed_drones_leave_the_picture(tmp_path):
    """QuadSwarm's preview was filmed from 1.6 m (0.6 + 2 x the 0.5 m formation), each drone 3
    to 5 pixels, and once the drones playing random actions crashed (parked far away) the
    camera framed them too: an empty floor. Every frame now shows the flying drones at least as
    large as QuadHover's one drone at its 0.7 m camera (about 32 pixels)."""
    committed = ROOT / "docs" / "previews" / load_manifest(ROOT / "docs" / "previews")[
        "rlbench/QuadSwarm-v0"]["file"]  # fmt: skip
    made = write_preview("rlbench/QuadSwarm-v0", tmp_path / "swarm.gif")
    for path in (committed, made.path):
        frames = _frames(path)
        assert len({f.tobytes() for f in frames}) >= MIN_DISTINCT_FRAMES
        pixels = [_drone_pixels(f) for f in frames]
        assert min(pixels) >= 25 and pixels[0] >= 60, (path, pixels)  # 4 drones at take-off
        # the formation stays in the picture: the other drones fly the expert too (with
        # random actions they crashed by the third frame, leaving one drone, about 33 pixels)
        assert np.median(pixels[len(pixels) // 2:]) >= 0.8 * pixels[0], (path, pixels)
    assert committed.stat().st_size < 150 * 1024 and made.bytes < 150 * 1024


def test_a_cooperative_teams_preview_flies_every_agent_with_the_expert():
    card = get_card("rlbench/QuadSwarm-v0")
    team = team_policy(card, PreviewOptions())
    assert team == card.reference.expert.policy
    assert team_policy(card, PreviewOptions(policy="random")) is None  # what is asked is played
    assert team_policy(get_card("rlbench/CoopNav-v0"), PreviewOptions()) is None  # its partners
    assert team_policy(get_card("rlbench/Duel-v0"), PreviewOptions()) is None  # an opponent
    entry = load_manifest(ROOT / "docs" / "previews")[card.id]
    assert entry["team"] == team and entry["notes"] == [
        f"every agent plays {team} (a cooperative team; through gym.make the other agents act "
        "at random)"]  # fmt: skip
    alive = {}
    for opponents in (team, None):  # None: gym.make's random partners
        env = gymnasium.make(card.id, **({"opponents": opponents} if opponents else {}))
        policy = reference_policy(env, team)
        obs, info = env.reset(seed=0)
        policy.reset(policy_seed(0))
        for _ in range(360):  # the preview's play
            obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
            if terminated or truncated:
                break
        alive[opponents] = list(env.unwrapped.env.agents)
        env.close()
    assert alive[team] == ["drone_0", "drone_1", "drone_2", "drone_3"]  # none crashed
    assert alive[None] == ["drone_0"]


def test_a_policy_stuck_on_one_seed_is_filmed_on_a_later_seed(tmp_path):
    """FourRooms' PPO turns on the spot on seeds 0 and 8; a later seed's play moves, and the
    record says which seed it is (GoToDoor's PPO did, before it saw its mission)."""
    preview = write_preview("rlbench/MiniGrid-FourRooms-v0", tmp_path / "rooms.gif")
    assert preview.seed > 0 and preview.seed % MAX_EPISODES == 0
    assert len({f.tobytes() for f in _frames(preview.path)}) >= MIN_DISTINCT_FRAMES
    stuck = write_preview("rlbench/MiniGrid-FourRooms-v0", tmp_path / "seed0.png",
                          PreviewOptions(seed=0))  # fmt: skip
    assert stuck.seed == 0  # a PNG is one frame: no search


def test_mujoco_renders_leave_no_log_file_and_no_known_deprecation(tmp_path, monkeypatch):
    """Gymnasium's half_cheetah.xml makes MuJoCo warn about ``settotalmass`` at every load:
    its default handler appended it to MUJOCO_LOG.TXT in the working directory, and the
    suite's turned it into a warning the docs build printed (``rlbench_suite.mujoco_log``)."""
    import warnings

    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        preview = write_preview("rlbench/HalfCheetah-v5", tmp_path / "cheetah.png")
    assert not [w for w in seen if "settotalmass" in str(w.message)]
    assert preview.kind == "png" and preview.notes == [
        "rendered by the model's tracking camera 'track'"]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cheetah.png"]
