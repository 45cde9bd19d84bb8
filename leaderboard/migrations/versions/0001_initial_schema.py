"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-23 23:43:35.826746
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("token_sha256", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
        sa.UniqueConstraint("token_sha256"),
    )
    op.create_table(
        "environments",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("family", sa.String(length=40), nullable=False),
        sa.Column("primary_metric", sa.String(length=40), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("card", sa.JSON(), nullable=False),
        sa.Column("spec_hash", sa.String(length=64), nullable=False),
        sa.Column("protocol_hash", sa.String(length=64), nullable=False),
        sa.Column("protocol", sa.JSON(), nullable=False),
        sa.Column("random_score", sa.Float(), nullable=True),
        sa.Column("expert_score", sa.Float(), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("synced_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "methods",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("family", sa.String(length=40), nullable=True),
        sa.Column("authors", sa.String(length=500), nullable=True),
        sa.Column("paper_url", sa.String(length=500), nullable=True),
        sa.Column("code_url", sa.String(length=500), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    with op.batch_alter_table("methods", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_methods_family"), ["family"], unique=False)

    op.create_table(
        "policy_artifacts",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("filename", sa.String(length=200), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("sha256"),
    )
    op.create_table(
        "suites",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("token_id", sa.Integer(), nullable=True),
        sa.Column("method_id", sa.Integer(), nullable=False),
        sa.Column("env_id", sa.String(length=200), nullable=False),
        sa.Column("artifact_sha256", sa.String(length=64), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["artifact_sha256"],
            ["policy_artifacts.sha256"],
        ),
        sa.ForeignKeyConstraint(
            ["env_id"],
            ["environments.id"],
        ),
        sa.ForeignKeyConstraint(
            ["method_id"],
            ["methods.id"],
        ),
        sa.ForeignKeyConstraint(
            ["token_id"],
            ["api_tokens.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "suite_envs",
        sa.Column("suite", sa.String(length=100), nullable=False),
        sa.Column("env_id", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(["env_id"], ["environments.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["suite"], ["suites.name"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("suite", "env_id"),
    )
    op.create_table(
        "results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("document_sha256", sa.String(length=64), nullable=False),
        sa.Column("env_id", sa.String(length=200), nullable=False),
        sa.Column("spec_hash", sa.String(length=64), nullable=False),
        sa.Column("protocol_hash", sa.String(length=64), nullable=False),
        sa.Column("artifact_sha256", sa.String(length=64), nullable=True),
        sa.Column("training_budget_steps", sa.Integer(), nullable=True),
        sa.Column("verification", sa.String(length=20), nullable=False),
        sa.Column("method_id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=True),
        sa.Column("policy_name", sa.String(length=300), nullable=False),
        sa.Column("episodes", sa.Integer(), nullable=False),
        sa.Column("return_mean", sa.Float(), nullable=False),
        sa.Column("primary_mean", sa.Float(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["env_id"],
            ["environments.id"],
        ),
        sa.ForeignKeyConstraint(
            ["method_id"],
            ["methods.id"],
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("document_sha256"),
    )
    with op.batch_alter_table("results", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_results_artifact_sha256"), ["artifact_sha256"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_results_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_results_env_id"), ["env_id"], unique=False)
        batch_op.create_index("ix_results_env_protocol", ["env_id", "protocol_hash"], unique=False)
        batch_op.create_index(batch_op.f("ix_results_method_id"), ["method_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_results_protocol_hash"), ["protocol_hash"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_results_training_budget_steps"), ["training_budget_steps"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_results_verification"), ["verification"], unique=False)

    op.create_table(
        "verification_jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("result_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["result_id"],
            ["results.id"],
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("verification_jobs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_verification_jobs_state"), ["state"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_verification_jobs_submission_id"), ["submission_id"], unique=False
        )



def downgrade() -> None:
    with op.batch_alter_table("verification_jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_verification_jobs_submission_id"))
        batch_op.drop_index(batch_op.f("ix_verification_jobs_state"))

    op.drop_table("verification_jobs")
    with op.batch_alter_table("results", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_results_verification"))
        batch_op.drop_index(batch_op.f("ix_results_training_budget_steps"))
        batch_op.drop_index(batch_op.f("ix_results_protocol_hash"))
        batch_op.drop_index(batch_op.f("ix_results_method_id"))
        batch_op.drop_index("ix_results_env_protocol")
        batch_op.drop_index(batch_op.f("ix_results_env_id"))
        batch_op.drop_index(batch_op.f("ix_results_created_at"))
        batch_op.drop_index(batch_op.f("ix_results_artifact_sha256"))

    op.drop_table("results")
    op.drop_table("suite_envs")
    op.drop_table("submissions")
    op.drop_table("suites")
    op.drop_table("policy_artifacts")
    with op.batch_alter_table("methods", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_methods_family"))

    op.drop_table("methods")
    op.drop_table("environments")
    op.drop_table("api_tokens")
