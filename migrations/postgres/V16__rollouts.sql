-- Safe rollouts: see migrations/sqlite/V16.
ALTER TABLE edge_reports ADD COLUMN health TEXT NOT NULL DEFAULT '';
ALTER TABLE edge_reports ADD COLUMN canary BOOLEAN NOT NULL DEFAULT FALSE;

CREATE TABLE rollouts (
    project_id        TEXT COLLATE "C" NOT NULL,
    number            BIGINT NOT NULL,
    revision          BIGINT NOT NULL,
    previous_revision BIGINT NOT NULL,
    state             TEXT   NOT NULL,
    stage             BIGINT NOT NULL,
    plan              TEXT   NOT NULL,
    edges             TEXT   NOT NULL,
    stage_started     TEXT   NOT NULL,
    reason            TEXT,
    failed_edges      TEXT   NOT NULL,
    created_by        TEXT COLLATE "C" NOT NULL,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    ended_at          BIGINT,
    version           BIGINT NOT NULL,
    PRIMARY KEY (project_id, number)
);
CREATE INDEX rollouts_live ON rollouts (project_id) WHERE state IN ('running', 'paused');

ALTER TABLE changes ADD COLUMN rollout BIGINT;
