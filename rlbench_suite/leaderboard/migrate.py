"""Alembic migrations of the leaderboard's database, run programmatically.

The migration scripts live in the top-level ``leaderboard/migrations`` content folder
(shipped in the wheel); :func:`upgrade` brings any database to the newest revision.
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
