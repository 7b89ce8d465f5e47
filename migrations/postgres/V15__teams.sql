-- Teams: see migrations/sqlite/V15.
ALTER TABLE organizations ADD COLUMN deleted_at BIGINT;
ALTER TABLE organizations ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE organizations ADD COLUMN created_by TEXT COLLATE "C";
CREATE INDEX organizations_created_by ON organizations (created_by, created_at) WHERE created_by IS NOT NULL;

ALTER TABLE memberships ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
DROP INDEX memberships_by_organization;
CREATE INDEX memberships_members ON memberships (organization_id, created_at, user_id);
CREATE INDEX memberships_members_by_role ON memberships (organization_id, role, created_at, user_id);

ALTER TABLE users ADD COLUMN avatar_url TEXT;
ALTER TABLE users ADD COLUMN terms_version TEXT;
ALTER TABLE users ADD COLUMN privacy_version TEXT;
ALTER TABLE users ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
CREATE INDEX users_email ON users (lower(email));

CREATE TABLE invitations (
    id              TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id),
    email           TEXT    NOT NULL,
    role            TEXT COLLATE "C" NOT NULL CHECK (role IN ('admin', 'editor', 'member')),
    digest          BYTEA   NOT NULL UNIQUE,
    created_by      TEXT COLLATE "C" NOT NULL,
    created_at      BIGINT  NOT NULL,
    expires_at      BIGINT  NOT NULL,
    accepted_at     BIGINT,
    accepted_by     TEXT COLLATE "C",
    deleted_at      BIGINT
);
CREATE INDEX invitations_by_organization ON invitations (organization_id, created_at, id);
CREATE INDEX invitations_by_email ON invitations (lower(email));
