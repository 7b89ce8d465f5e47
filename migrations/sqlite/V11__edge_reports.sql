-- What edges report of the projects they run (docs/feed.md, "Who runs
-- which revision"): each edge's last report, by the name it chose;
-- `error` is empty unless the report is a failure.
CREATE TABLE edge_reports (
    project_id  TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    revision    INTEGER NOT NULL,
    status      TEXT    NOT NULL,
    error       TEXT    NOT NULL,
    reported_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, name)
) STRICT;
