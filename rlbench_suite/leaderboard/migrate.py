"""Alembic migrations of the leaderboard's database, run programmatically.

The migration scripts live in the top-level ``leaderboard/migrations`` content folder
(shipped in the wheel); :func:`upgrade` brings any database to the newest revision,
:func:`migrate_to` to any named one (back only when asked: a downgrade drops data).
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from rlbench_suite.resources import content_dir


def migrations_dir() -> Path:
    """The folder of the migration scripts."""
    return content_dir("leaderboard") / "migrations"


def alembic_config() -> Config:
    """An alembic configuration pointing at the migration scripts."""
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


def head_revision() -> str | None:
    """The newest revision of the scripts."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None: never migrated)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Migrate the database to ``revision`` (default: the newest); return where it is now."""
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    return current_revision(engine)


class RevisionError(ValueError):
    """A revision the scripts do not have, or a downgrade not asked for; the message says
    what is accepted."""


def revisions() -> list[str]:
    """The scripts' revisions, oldest first."""
    walked = ScriptDirectory.from_config(alembic_config()).walk_revisions()
    return [script.revision for script in reversed(list(walked))]


def migrate_to(engine: Engine, revision: str, downgrade: bool = False) -> str | None:
    """Migrate the database to ``revision`` (a script's, ``head`` or ``base``: no tables):
    up, or down where ``downgrade`` allows it; return where it is now."""
    order = [None, *revisions()]
    names = {"base": None, "head": order[-1], **{r: r for r in order[1:]}}
    if revision not in names:
        accepted = ", ".join(["head", "base", *order[1:]])
        raise RevisionError(f"unknown revision {revision!r}; accepted: {accepted}")
    current = current_revision(engine)
    if current not in order:
        raise RevisionError(
            f"the database is at revision {current!r}, which these migration scripts do not "
            f"have (theirs: {', '.join(order[1:])}): it was migrated by a newer rlbench-suite"
        )
    if order.index(names[revision]) >= order.index(current):
        return upgrade(engine, revision)
    if not downgrade:
        drops = "every table and row" if revision == "base" else "what later revisions added"
        raise RevisionError(
            f"revision {revision!r} is older than the database's {current}: going back drops "
            f"{drops}; pass --downgrade to do it"
        )
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)
    return current_revision(engine)
