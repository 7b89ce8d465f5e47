-- What edges report of the projects they run: see migrations/sqlite/V11.
CREATE TABLE edge_reports (
    project_id  TEXT COLLATE "C" NOT NULL,
    name        TEXT COLLATE "C" NOT NULL,
    revision    BIGINT NOT NULL,
    status      TEXT   NOT NULL,
    error       TEXT   NOT NULL,
    reported_at BIGINT NOT NULL,
    PRIMARY KEY (project_id, name)
);
