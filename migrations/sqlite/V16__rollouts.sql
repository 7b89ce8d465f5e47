-- Safe rollouts (docs/rollouts.md, issue 49).
--
-- An edge's report says what its health check found after applying
-- (`health`: '' none, 'healthy', 'unhealthy') and whether it asks to be
-- among a rollout's first (`canary`).
ALTER TABLE edge_reports ADD COLUMN health TEXT NOT NULL DEFAULT '';
ALTER TABLE edge_reports ADD COLUMN canary INTEGER NOT NULL DEFAULT 0 CHECK (canary IN (0, 1));

-- A rollout of a revision to a project's edges, stage by stage. `plan`,
-- `edges` (the edges placed when it started, in their order, and where
-- each stage ends), `stage_started` (when each stage reached began,
-- milliseconds) and `failed_edges` are JSON written and read by
-- src/domain/rollout.rs. `stage` is the current stage, from 0.
CREATE TABLE rollouts (
    project_id        TEXT    NOT NULL,
    number            INTEGER NOT NULL,
    revision          INTEGER NOT NULL,
    previous_revision INTEGER NOT NULL,
    state             TEXT    NOT NULL,
    stage             INTEGER NOT NULL,
    plan              TEXT    NOT NULL,
    edges             TEXT    NOT NULL,
    stage_started     TEXT    NOT NULL,
    reason            TEXT,
    failed_edges      TEXT    NOT NULL,
    created_by        TEXT    NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    ended_at          INTEGER,
    version           INTEGER NOT NULL,
    PRIMARY KEY (project_id, number)
) STRICT;
-- What the driver looks at every second: the rollouts not ended.
CREATE INDEX rollouts_live ON rollouts (project_id) WHERE state IN ('running', 'paused');

-- A rollout's changes in the feed name it.
ALTER TABLE changes ADD COLUMN rollout INTEGER;
