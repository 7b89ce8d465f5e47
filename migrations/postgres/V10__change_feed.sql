-- The change feed: see migrations/sqlite/V10.
CREATE TABLE changes (
    seq                 BIGINT PRIMARY KEY,
    at                  BIGINT NOT NULL,
    kind                TEXT   NOT NULL,
    organization_id     TEXT COLLATE "C" NOT NULL,
    organization_number BIGINT NOT NULL,
    project_id          TEXT COLLATE "C" NOT NULL,
    revision            BIGINT,
    version             BIGINT NOT NULL
);
CREATE INDEX changes_organization ON changes (organization_number, seq);
CREATE INDEX changes_project ON changes (project_id, seq);

CREATE TABLE feed_state (
    id             BIGINT PRIMARY KEY CHECK (id = 1),
    head           BIGINT NOT NULL,
    pruned_through BIGINT NOT NULL
);
INSERT INTO feed_state (id, head, pruned_through) VALUES (1, 0, 0);
