-- Listings for callers in many organizations (docs/choices.md, "Callers in
-- many organizations").
--
-- Each organization gets a small integer `number`, assigned once and never
-- reused; each project carries its organization's number. A caller's
-- organizations are then a bitmap of numbers, which a statement tests
-- against each entry of an index in the global (created_at, id) order
-- without visiting the table.

ALTER TABLE organizations ADD COLUMN number INTEGER;
UPDATE organizations SET number = ranked.n
  FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) - 1 AS n FROM organizations) AS ranked
 WHERE ranked.id = organizations.id;
CREATE UNIQUE INDEX organizations_number ON organizations (number);

-- A new organization takes the next number (statements never name the
-- column; PostgreSQL's identity column does the same there).
CREATE TRIGGER organizations_numbered AFTER INSERT ON organizations
  WHEN NEW.number IS NULL
BEGIN
  UPDATE organizations SET number = (SELECT COALESCE(MAX(number), -1) + 1 FROM organizations)
   WHERE id = NEW.id;
END;

-- Each user's organizations, whole, as `number:id` entries joined by
-- commas (src/domain/organization_set.rs), written with its memberships:
-- authenticating a caller in a thousand organizations reads one row.
ALTER TABLE users ADD COLUMN memberships TEXT NOT NULL DEFAULT '';
UPDATE users SET memberships = COALESCE(
  (SELECT group_concat(o.number || ':' || o.id, ',')
     FROM memberships m JOIN organizations o ON o.id = m.organization_id
    WHERE m.user_id = users.id), '');

-- Written with organization_id by every statement that writes a project.
ALTER TABLE projects ADD COLUMN organization_number INTEGER NOT NULL DEFAULT -1;
UPDATE projects SET organization_number =
  (SELECT number FROM organizations WHERE organizations.id = projects.organization_id);

-- One organization's projects in order.
DROP INDEX projects_listing;
CREATE INDEX projects_listing ON projects (organization_number, created_at, id)
    WHERE deleted_at IS NULL;
-- Every project in order, with its organization's number: a caller in many
-- organizations reads it once instead of once per organization (and export
-- walks it).
DROP INDEX projects_created;
CREATE INDEX projects_order ON projects (created_at, id, organization_number)
    WHERE deleted_at IS NULL;

-- The column's default only fills the rows that were there before: a
-- statement that writes a project without its organization's number fails
-- here, as it does on PostgreSQL (NOT NULL, no default).
CREATE TRIGGER projects_numbered BEFORE INSERT ON projects
  WHEN NEW.organization_number < 0
BEGIN
  SELECT RAISE(ABORT, 'a project is written with its organization_number');
END;
