-- Each membership carries the user's role in that organization: see
-- migrations/sqlite/V5.
ALTER TABLE memberships ADD COLUMN role TEXT COLLATE "C" NOT NULL DEFAULT 'admin'
    CHECK (role IN ('admin', 'editor', 'member'));
