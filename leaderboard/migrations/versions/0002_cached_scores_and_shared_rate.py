"""cached per-run scores, ranking generations, shared rate limit

Results get the run's scores under their card (``score``, ``episode_scores``,
``budget_class``), backfilled here from the stored Result JSON by the same function that
fills them on insert (``leaderboard.scores.score_columns``); environments get the
``ranking_generation`` that keys cached rankings; ``rate_hits`` holds the submissions the
rate limit counts, shared by every server process.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24 02:40:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _backfill() -> None:
    from rlbench_suite.core.cards import EnvCard
    from rlbench_suite.leaderboard.scores import score_columns

    connection = op.get_bind()
    meta = sa.MetaData()
    envs = sa.Table("environments", meta, autoload_with=connection)
    results = sa.Table("results", meta, autoload_with=connection)
    for env_id, card in connection.execute(sa.select(envs.c.id, envs.c.card)).all():
        parsed = EnvCard.model_validate(card)
        rows = connection.execute(
            sa.select(results.c.id, results.c.document).where(results.c.env_id == env_id)
        ).all()
        for result_id, document in rows:
            connection.execute(
                results.update()
                .where(results.c.id == result_id)
                .values(**score_columns(parsed, document))
            )


def upgrade() -> None:
    with op.batch_alter_table("environments", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("ranking_generation", sa.Integer(), server_default="0", nullable=False)
        )
    with op.batch_alter_table("results", schema=None) as batch_op:
        batch_op.add_column(sa.Column("score", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("episode_scores", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("budget_class", sa.String(length=20), nullable=True))
        batch_op.create_index(batch_op.f("ix_results_budget_class"), ["budget_class"], unique=False)
    op.create_table(
        "rate_hits",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["token_id"], ["api_tokens.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_rate_hits_token_at", "rate_hits", ["token_id", "at"], unique=False)
    _backfill()


def downgrade() -> None:
    op.drop_index("ix_rate_hits_token_at", table_name="rate_hits")
    op.drop_table("rate_hits")
    with op.batch_alter_table("results", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_results_budget_class"))
        batch_op.drop_column("budget_class")
        batch_op.drop_column("episode_scores")
        batch_op.drop_column("score")
    with op.batch_alter_table("environments", schema=None) as batch_op:
        batch_op.drop_column("ranking_generation")
