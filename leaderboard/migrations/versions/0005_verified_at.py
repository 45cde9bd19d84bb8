"""when a result was verified: lists of verified results go by it

Results get ``verified_at``: when the row became verified (stored verified as the server's
re-run, or reproduced by one: ``leaderboard.reconcile``), so the home page's newest verified
results and ``GET /api/results?verification=verified`` put a self-reported result verified
later above older verifications (they went by row id). It is filled here for the verified
rows stored before: a re-run's arrival, or for a self-reported row the later of its own
arrival and that of the oldest re-run of its artifact on its env and protocol (when
``reconcile`` compared them; the time the result page showed as "verified at"). Plain ALTERs
on SQLite too (copying ``results`` there is refused by the foreign keys that point at it).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 21:50:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None
INDEX = "ix_results_verified_at"


def _backfill() -> None:
    connection = op.get_bind()
    meta = sa.MetaData()
    results = sa.Table("results", meta, autoload_with=connection)
    jobs = sa.Table("verification_jobs", meta, autoload_with=connection)
    reruns = sa.select(jobs.c.result_id).where(jobs.c.result_id.is_not(None))
    rows = connection.execute(
        sa.select(
            results.c.id,
            results.c.created_at,
            results.c.env_id,
            results.c.protocol_hash,
            results.c.artifact_sha256,
            results.c.id.in_(reruns).label("is_rerun"),
        ).where(results.c.verification == "verified")
    ).all()
    for result_id, created_at, env_id, protocol_hash, artifact, is_rerun in rows:
        verified_at = created_at
        if not is_rerun and artifact:
            rerun_at = connection.scalar(
                sa.select(results.c.created_at)
                .where(
                    results.c.id.in_(reruns),
                    results.c.env_id == env_id,
                    results.c.protocol_hash == protocol_hash,
                    results.c.artifact_sha256 == artifact,
                    results.c.verification == "verified",
                    results.c.id != result_id,
                )
                .order_by(results.c.id)
                .limit(1)
            )
            if rerun_at is not None:
                verified_at = max(verified_at, rerun_at)
        connection.execute(
            results.update().where(results.c.id == result_id).values(verified_at=verified_at)
        )


def upgrade() -> None:
    op.add_column("results", sa.Column("verified_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index(INDEX, "results", ["verified_at"], unique=False)
    _backfill()


def downgrade() -> None:
    op.drop_index(INDEX, table_name="results")
    op.drop_column("results", "verified_at")
