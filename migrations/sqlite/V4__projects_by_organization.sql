-- Each organization's projects side by side in the file (docs/choices.md,
-- "Projects stored by organization").
--
-- A project's rowid is (organization_number + 1) * 2^32 plus its place in
-- its organization (new projects take the next place: see the SQLite
-- driver's project statement). The table is stored in rowid order, so a
-- page of one organization's projects reads a few table pages, not one
-- page per project, as it did when rows were stored in the order they
-- came, every organization's interleaved. Nothing reads a rowid's value:
-- a project moved to another organization keeps its row where it was.
--
-- The table is rebuilt in that order (SQLite's way of changing a table:
-- new table, copy, drop, rename), with the same columns, indexes and
-- trigger as before.

CREATE TABLE projects_by_organization (
    id                  TEXT    NOT NULL PRIMARY KEY,
    organization_id     TEXT    NOT NULL REFERENCES organizations (id),
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    deleted_at          INTEGER,
    body                TEXT    NOT NULL,
    organization_number INTEGER NOT NULL DEFAULT -1
) STRICT;

INSERT INTO projects_by_organization
       (rowid, id, organization_id, created_at, updated_at, deleted_at, body, organization_number)
SELECT (organization_number + 1) * 4294967296
         + row_number() OVER (PARTITION BY organization_number ORDER BY created_at, id),
       id, organization_id, created_at, updated_at, deleted_at, body, organization_number
  FROM projects
 ORDER BY organization_number, created_at, id;

DROP TABLE projects;
ALTER TABLE projects_by_organization RENAME TO projects;

CREATE INDEX projects_listing ON projects (organization_number, created_at, id)
    WHERE deleted_at IS NULL;
CREATE INDEX projects_order ON projects (created_at, id, organization_number)
    WHERE deleted_at IS NULL;

CREATE TRIGGER projects_numbered BEFORE INSERT ON projects
  WHEN NEW.organization_number < 0
BEGIN
  SELECT RAISE(ABORT, 'a project is written with its organization_number');
END;
