"""one row per self-reported run; verification jobs' owner and heartbeat

Results get ``run_sha256`` (``leaderboard.store.run_sha256``: the run's method, env,
protocol, episodes, policy name and artifact), unique, so a run posted by many requests at
once is stored once; it is filled here for the rows that are not the worker's re-runs, in
id order (a run already stored twice keeps its key on the first row only). Verification
jobs get ``claimed_by`` and ``heartbeat_at``: a job is queued again only when the worker
that claimed it stopped beating, and a worker that lost its job stores nothing. Both
directions are plain ALTERs on SQLite too (copying ``results`` there is refused by the
foreign keys that point at it).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24 15:20:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _backfill() -> None:
    from rlbench_suite.leaderboard.store import run_sha256

    connection = op.get_bind()
    meta = sa.MetaData()
    results = sa.Table("results", meta, autoload_with=connection)
    submissions = sa.Table("submissions", meta, autoload_with=connection)
    query = (
        sa.select(results.c.id, results.c.method_id, results.c.document)
        .select_from(results.outerjoin(submissions, results.c.submission_id == submissions.c.id))
        .where(sa.or_(submissions.c.kind.is_(None), submissions.c.kind != "policy"))
        .order_by(results.c.id)
    )
    seen: set[str] = set()
    for result_id, method_id, document in connection.execute(query).all():
        key = run_sha256(method_id, document)
        if key in seen:
            continue
        seen.add(key)
        connection.execute(results.update().where(results.c.id == result_id).values(run_sha256=key))


def upgrade() -> None:
    with op.batch_alter_table("results", schema=None) as batch_op:
        batch_op.add_column(sa.Column("run_sha256", sa.String(length=64), nullable=True))
        batch_op.create_index(batch_op.f("ix_results_run_sha256"), ["run_sha256"], unique=True)
    with op.batch_alter_table("verification_jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("claimed_by", sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
    _backfill()


def downgrade() -> None:
    # plain ALTERs, not batch mode: batch mode copies ``results`` on SQLite, and dropping the
    # old table there is refused while verification jobs point at its rows (foreign keys)
    op.drop_column("verification_jobs", "heartbeat_at")
    op.drop_column("verification_jobs", "claimed_by")
    op.drop_index(op.f("ix_results_run_sha256"), table_name="results")
    op.drop_column("results", "run_sha256")
