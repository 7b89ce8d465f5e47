-- The change feed (docs/feed.md): every change to a project or to a
-- proxy-settings revision, written in the write's own transaction (beside
-- its audit record), so that a write rolled back leaves none.
--
-- `seq` is the change's position. It is taken from feed_state.head by an
-- UPDATE of that one row, in the write's transaction: on PostgreSQL the
-- row's lock is held until the commit, so positions are taken in the
-- order the writes commit and a reader that sees a position sees every
-- one before it (a sequence taken before the commit would let a later
-- number commit first, and a follower skip the earlier one).
-- `organization_number` decides who may see the change.
CREATE TABLE changes (
    seq                 INTEGER PRIMARY KEY,
    at                  INTEGER NOT NULL,
    kind                TEXT    NOT NULL,
    organization_id     TEXT    NOT NULL,
    organization_number INTEGER NOT NULL,
    project_id          TEXT    NOT NULL,
    revision            INTEGER,
    version             INTEGER NOT NULL
) STRICT;
CREATE INDEX changes_organization ON changes (organization_number, seq);
CREATE INDEX changes_project ON changes (project_id, seq);

-- head: the last position taken; pruned_through: changes up to this
-- position are no longer kept (a cursor before it gets a reset).
CREATE TABLE feed_state (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    head           INTEGER NOT NULL,
    pruned_through INTEGER NOT NULL
) STRICT;
INSERT INTO feed_state (id, head, pruned_through) VALUES (1, 0, 0);
