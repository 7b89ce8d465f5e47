-- What the directory's answers need: see migrations/sqlite/V6.

ALTER TABLE users ADD COLUMN name TEXT NOT NULL DEFAULT '';
UPDATE users SET name = split_part(email, '@', 1);
ALTER TABLE users ADD COLUMN updated_at BIGINT;
UPDATE users SET updated_at = created_at;
ALTER TABLE users ALTER COLUMN updated_at SET NOT NULL;

ALTER TABLE organizations ADD COLUMN type TEXT COLLATE "C" NOT NULL DEFAULT 'pro'
    CHECK (type IN ('pro', 'perso'));
ALTER TABLE organizations ADD COLUMN updated_at BIGINT;
UPDATE organizations SET updated_at = created_at;
ALTER TABLE organizations ALTER COLUMN updated_at SET NOT NULL;

ALTER TABLE organizations ADD COLUMN slug TEXT COLLATE "C";
UPDATE organizations SET slug = id;
UPDATE organizations AS o SET slug = lower(replace(btrim(o.name), ' ', '-'))
 WHERE lower(replace(btrim(o.name), ' ', '-')) !~ '[^a-z0-9-]'
   AND length(btrim(o.name)) BETWEEN 1 AND 63
   AND lower(replace(btrim(o.name), ' ', '-')) !~ '^-|-$'
   AND (SELECT count(*) FROM organizations p
         WHERE lower(replace(btrim(p.name), ' ', '-')) = lower(replace(btrim(o.name), ' ', '-'))) = 1
   AND NOT EXISTS (SELECT 1 FROM organizations p WHERE p.id = lower(replace(btrim(o.name), ' ', '-')));
ALTER TABLE organizations ALTER COLUMN slug SET NOT NULL;
CREATE UNIQUE INDEX organizations_slug ON organizations (slug);

ALTER TABLE memberships ADD COLUMN created_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE memberships ADD COLUMN organization_created_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE memberships ADD COLUMN organization_type TEXT COLLATE "C" NOT NULL DEFAULT 'pro';
UPDATE memberships m SET
  organization_created_at = o.created_at,
  created_at = GREATEST(o.created_at, u.created_at)
  FROM organizations o, users u
 WHERE o.id = m.organization_id AND u.id = m.user_id;

CREATE INDEX memberships_listing ON memberships (user_id, organization_created_at, organization_id);
CREATE INDEX memberships_by_type ON memberships
    (user_id, organization_type, organization_created_at, organization_id);
CREATE INDEX memberships_oldest ON memberships
    (user_id, created_at, organization_created_at, organization_id);
