-- Each membership carries the user's role in that organization
-- (docs/management.md, "Roles"): `admin` may do everything, `editor` too,
-- `member` only reads projects and proxy settings and manages its own
-- tokens. Memberships made before roles existed were full ones: `admin`.
ALTER TABLE memberships ADD COLUMN role TEXT NOT NULL DEFAULT 'admin'
    CHECK (role IN ('admin', 'editor', 'member'));
