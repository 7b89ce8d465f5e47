-- What the directory's answers need (docs/management.md, "Roles and
-- organizations"): users' names, organizations' slugs and types, both
-- kinds' updated_at, and each membership's age.

-- A user's name defaults to the part of its email before `@`.
ALTER TABLE users ADD COLUMN name TEXT NOT NULL DEFAULT '';
UPDATE users SET name = substr(email, 1, instr(email, '@') - 1);
ALTER TABLE users ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
UPDATE users SET updated_at = created_at;

ALTER TABLE organizations ADD COLUMN type TEXT NOT NULL DEFAULT 'pro'
    CHECK (type IN ('pro', 'perso'));
ALTER TABLE organizations ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
UPDATE organizations SET updated_at = created_at;

-- Organizations made before slugs take their name, lowercased with spaces
-- as dashes, when that is a slug no other organization would take; their
-- id (a UUID: a slug too, and unique) otherwise. New ones get theirs from
-- the service's own rule (domain::directory::slug_of).
ALTER TABLE organizations ADD COLUMN slug TEXT NOT NULL DEFAULT '';
UPDATE organizations SET slug = id;
UPDATE organizations AS o SET slug = lower(replace(trim(o.name), ' ', '-'))
 WHERE lower(replace(trim(o.name), ' ', '-')) NOT GLOB '*[^a-z0-9-]*'
   AND length(trim(o.name)) BETWEEN 1 AND 63
   AND lower(replace(trim(o.name), ' ', '-')) NOT GLOB '-*'
   AND lower(replace(trim(o.name), ' ', '-')) NOT GLOB '*-'
   AND (SELECT count(*) FROM organizations p
         WHERE lower(replace(trim(p.name), ' ', '-')) = lower(replace(trim(o.name), ' ', '-'))) = 1
   AND NOT EXISTS (SELECT 1 FROM organizations p WHERE p.id = lower(replace(trim(o.name), ' ', '-')));
CREATE UNIQUE INDEX organizations_slug ON organizations (slug);

-- A membership's age (`created_at`: when the user joined, at the earliest
-- when both existed) decides the user's "oldest membership"; its
-- organization's creation time and type are kept beside it (and kept
-- current by the statements that change an organization), so that a page
-- of a user's organizations, by creation and of a type or not, is one
-- range read on an index whatever the number of organizations the user
-- is in.
ALTER TABLE memberships ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memberships ADD COLUMN organization_created_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memberships ADD COLUMN organization_type TEXT NOT NULL DEFAULT 'pro';
UPDATE memberships SET
  organization_created_at = (SELECT o.created_at FROM organizations o WHERE o.id = memberships.organization_id),
  created_at = max((SELECT o.created_at FROM organizations o WHERE o.id = memberships.organization_id),
                   (SELECT u.created_at FROM users u WHERE u.id = memberships.user_id));

CREATE INDEX memberships_listing ON memberships (user_id, organization_created_at, organization_id);
CREATE INDEX memberships_by_type ON memberships
    (user_id, organization_type, organization_created_at, organization_id);
CREATE INDEX memberships_oldest ON memberships
    (user_id, created_at, organization_created_at, organization_id);
