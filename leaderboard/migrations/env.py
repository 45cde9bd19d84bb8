"""Alembic's environment for the leaderboard: run by ``rlbench_suite.leaderboard.migrate``.

The connection comes from ``config.attributes["connection"]``; the target metadata is the
leaderboard's models, so ``alembic revision --autogenerate`` compares against them.
"""

from alembic import context

from rlbench_suite.leaderboard.models import Base

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "run the leaderboard's migrations with `rlbench leaderboard migrate [--db URL]`"
    )
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
