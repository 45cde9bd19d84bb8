"""one row per agreeing verification: the server's re-run kept as evidence

Results get ``verifies_result_id``: on the server's re-run of a policy artifact that
reproduced a self-reported result, that result's id. The site then lists, counts and ranks
the self-reported row (verified) alone, and shows the re-run on its page as the evidence
(``models.listed``). It is filled here for the re-runs stored before: a verification job's
result whose artifact, env and protocol have a verified row that is no job's result (a
self-reported row the re-run reproduced, ``leaderboard.reconcile``) links the oldest such row.
The column has an index and no foreign-key constraint, so both directions are plain ALTERs on
SQLite too (copying ``results`` there is refused by the foreign keys that point at it).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 18:40:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None
INDEX = "ix_results_verifies_result_id"


def _backfill() -> None:
    connection = op.get_bind()
    meta = sa.MetaData()
    results = sa.Table("results", meta, autoload_with=connection)
    jobs = sa.Table("verification_jobs", meta, autoload_with=connection)
    reruns = sa.select(jobs.c.result_id).where(jobs.c.result_id.is_not(None))
    rerun_rows = connection.execute(
        sa.select(
            results.c.id, results.c.env_id, results.c.protocol_hash, results.c.artifact_sha256
        )
        .where(results.c.id.in_(reruns), results.c.verification == "verified")
        .order_by(results.c.id)
    ).all()
    for rerun_id, env_id, protocol_hash, artifact in rerun_rows:
        if not artifact:
            continue
        claimed = connection.scalar(
            sa.select(results.c.id)
            .where(
                results.c.env_id == env_id,
                results.c.protocol_hash == protocol_hash,
                results.c.artifact_sha256 == artifact,
                results.c.verification == "verified",
                results.c.id.not_in(reruns),
            )
            .order_by(results.c.id)
            .limit(1)
        )
        if claimed is not None:
            connection.execute(
                results.update().where(results.c.id == rerun_id).values(verifies_result_id=claimed)
            )


def upgrade() -> None:
    op.add_column("results", sa.Column("verifies_result_id", sa.Integer(), nullable=True))
    op.create_index(INDEX, "results", ["verifies_result_id"], unique=False)
    _backfill()


def downgrade() -> None:
    op.drop_index(INDEX, table_name="results")
    op.drop_column("results", "verifies_result_id")
