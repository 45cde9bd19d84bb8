"""The rules of the Duel fighting game (after FightLadder), independent of any API.

Two fighters on a 10 m side-view arena at 15 frames per second. Each frame both choose one
of six actions (:data:`ACTIONS`) at once. An attack commits the fighter for
``STARTUP + ACTIVE + RECOVERY`` frames: it hits during its active frames an opponent in
front within ``REACH`` (and not high in the air) for ``DAMAGE`` health, stunning it for
``HITSTUN`` frames, unless the opponent is blocking on the ground facing the attacker, which
takes ``CHIP`` damage instead. Jumps clear attacks. A fighter whose health reaches 0 loses;
when the round timer runs out, the one with more health wins.

Observations and moves are egocentric: every position and velocity is mirrored so that the
fighter faces +x, the opponent's are relative to the fighter (:func:`observe`), and the
moves are ``back`` and ``forward`` (along the way the fighter faces), so both seats play
the same game.

The observation layout is named here once (:func:`observe` writes it, the ladder's bots
read it): a block of ``FIGHTER_SIZE`` values for the fighter (at :data:`ME`), one for the
opponent (at :data:`OPPONENT`), then the fraction of the round left (:data:`TIME_LEFT`).
Inside a block: :data:`X` (own: position over the arena width, from the wall behind;
opponent: its distance in front over the width), :data:`Y` (height; the opponent's relative),
:data:`VX`, :data:`VY` (over the walking and jump speeds), :data:`HP` (health over
``HEALTH``), :data:`PHASE` (one-hot over :data:`PHASES`) and :data:`TIMER` (frames left in
the phase over ``RECOVERY``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ACTIONS = ("noop", "back", "forward", "jump", "attack", "block")
NOOP, BACK, FORWARD, JUMP, ATTACK, BLOCK = range(6)
PHASES = ("idle", "startup", "active", "recovery", "block", "hitstun")
FPS = 15
DT = 1.0 / FPS
WIDTH = 10.0  # m
SPEED, JUMP_SPEED, GRAVITY = 4.0, 7.0, 25.0  # m/s, m/s, m/s^2
STARTUP, ACTIVE, RECOVERY, HITSTUN = 3, 2, 6, 7  # frames
REACH, MIN_GAP, HIGH = 1.4, 0.6, 0.9  # m
DAMAGE, CHIP, HEALTH = 10.0, 1.0, 100.0
KNOCKBACK, BLOCK_PUSH = 0.8, 0.4  # m
X, Y, VX, VY, HP = range(5)  # the observation layout (see the module docstring)
PHASE = slice(HP + 1, HP + 1 + len(PHASES))
TIMER = PHASE.stop
FIGHTER_SIZE = TIMER + 1
ME, OPPONENT, TIME_LEFT = 0, FIGHTER_SIZE, 2 * FIGHTER_SIZE
OBS_SIZE = TIME_LEFT + 1


@dataclass
class Fighter:
    """One fighter's state; ``timer`` counts the frames left in a committed phase."""

    x: float
    y: float = 0.0
    vx: float = 0.0
    vy: float = 0.0
    health: float = HEALTH
    phase: str = "idle"
    timer: int = 0
    facing: int = 1
    connected: bool = False  # the current attack has hit

    @property
    def airborne(self) -> bool:
        return self.y > 0.0

    @property
    def free(self) -> bool:
        """Whether the fighter can act this frame (not inside an attack or stun)."""
        return self.phase in ("idle", "block")


def new_round(rng: np.random.Generator) -> tuple[Fighter, Fighter]:
    """Two fighters at seeded positions about 3 to 5 m apart, facing each other."""
    centre, gap = rng.uniform(4.0, 6.0), rng.uniform(3.0, 5.0)
    return Fighter(x=centre - gap / 2, facing=1), Fighter(x=centre + gap / 2, facing=-1)


def advance(fighters: tuple[Fighter, Fighter], actions: tuple[int, int]) -> tuple[float, float]:
    """Play one frame; return the damage each fighter took."""
    for fighter, action in zip(fighters, actions, strict=True):
        _act(fighter, action)
    for fighter in fighters:
        _move(fighter)
    _separate(*fighters)
    # both attacks are judged on the same frame before either lands: no first-mover edge
    landing = [_lands(attacker, defender) for attacker, defender in (fighters, fighters[::-1])]
    taken = [0.0, 0.0]
    for i, (attacker, defender) in enumerate((fighters, fighters[::-1])):
        if landing[i] is not None:
            taken[1 - i] = _apply_hit(attacker, defender, guarded=landing[i])
    for me, other in (fighters, fighters[::-1]):
        if me.free and not me.airborne:
            me.facing = 1 if other.x >= me.x else -1
    return taken[0], taken[1]


def _act(f: Fighter, action: int) -> None:
    if not f.free:  # committed: count down and move on to the next phase
        f.timer -= 1
        if f.timer <= 0:
            following = {"startup": ("active", ACTIVE), "active": ("recovery", RECOVERY)}
            f.phase, f.timer = following.get(f.phase, ("idle", 0))
        if not f.airborne:
            f.vx = 0.0 if f.phase != "hitstun" else f.vx
        return
    f.phase = "idle"
    if action == ATTACK:
        f.phase, f.timer, f.connected = "startup", STARTUP, False
        if not f.airborne:
            f.vx = 0.0
    elif action == BLOCK and not f.airborne:
        f.phase, f.vx = "block", 0.0
    elif action == JUMP and not f.airborne:
        f.vy = JUMP_SPEED
    elif action in (BACK, FORWARD) and not f.airborne:
        f.vx = (SPEED if action == FORWARD else -SPEED) * f.facing
    elif not f.airborne:
        f.vx = 0.0


def _move(f: Fighter) -> None:
    f.x = float(np.clip(f.x + f.vx * DT, 0.0, WIDTH))
    if f.airborne or f.vy > 0:
        f.y += f.vy * DT
        f.vy -= GRAVITY * DT
        if f.y <= 0.0:
            f.y, f.vy = 0.0, 0.0
    if f.phase == "hitstun" and not f.airborne:
        f.vx *= 0.5


def _separate(a: Fighter, b: Fighter) -> None:
    """Fighters on the ground cannot stand closer than ``MIN_GAP``."""
    gap = b.x - a.x
    if abs(gap) < MIN_GAP and not (a.airborne or b.airborne):
        push = (MIN_GAP - abs(gap)) / 2 * (1 if gap >= 0 else -1)
        a.x = float(np.clip(a.x - push, 0.0, WIDTH))
        b.x = float(np.clip(b.x + push, 0.0, WIDTH))


def _lands(attacker: Fighter, defender: Fighter) -> bool | None:
    """None if ``attacker``'s attack misses this frame, else whether it is blocked."""
    if attacker.phase != "active" or attacker.connected:
        return None
    ahead = (defender.x - attacker.x) * attacker.facing
    if not (0.0 <= ahead <= REACH) or abs(defender.y - attacker.y) > HIGH:
        return None
    return defender.phase == "block" and defender.facing == -attacker.facing


def _apply_hit(attacker: Fighter, defender: Fighter, guarded: bool) -> float:
    """Land ``attacker``'s attack on ``defender``; return the damage done."""
    attacker.connected = True
    if guarded:
        attacker.x = float(np.clip(attacker.x - attacker.facing * BLOCK_PUSH, 0.0, WIDTH))
        damage = CHIP
    else:
        defender.phase, defender.timer = "hitstun", HITSTUN
        defender.vx = attacker.facing * KNOCKBACK * FPS / HITSTUN
        damage = DAMAGE
    defender.health = max(0.0, defender.health - damage)
    return damage


def observe(me: Fighter, other: Fighter, time_left: float) -> np.ndarray:
    """The egocentric observation of ``me`` (``OBS_SIZE`` float32 values)."""
    s = me.facing
    obs = np.zeros(OBS_SIZE, np.float32)
    own_x = me.x / WIDTH if s > 0 else 1.0 - me.x / WIDTH
    _write_fighter(fighter(obs, ME), me, own_x, me.y, s)
    _write_fighter(fighter(obs, OPPONENT), other, (other.x - me.x) * s / WIDTH, other.y - me.y, s)
    obs[TIME_LEFT] = time_left
    return obs


def _write_fighter(values: np.ndarray, f: Fighter, x: float, y: float, facing: int) -> None:
    """Fill a fighter block with ``f``'s state seen by an observer facing ``facing``."""
    values[X], values[Y] = x, y
    values[VX], values[VY] = f.vx * facing / SPEED, f.vy / JUMP_SPEED
    values[HP] = f.health / HEALTH
    values[PHASE.start + PHASES.index(f.phase)] = 1.0
    values[TIMER] = f.timer / RECOVERY


def fighter(observation: np.ndarray, block: int) -> np.ndarray:
    """The values of the fighter ``block`` (:data:`ME` or :data:`OPPONENT`) of an observation."""
    return observation[block : block + FIGHTER_SIZE]
