-- Teams (docs/teams.md): organizations made, renamed and deleted over the
-- API, members listed and changed, invitations.

-- An organization deleted over the API keeps its row (its number stays
-- taken, its removed projects' rows still name it) with `deleted_at` set,
-- its slug given back (set to its id) and no membership: nobody sees it.
ALTER TABLE organizations ADD COLUMN deleted_at INTEGER;
-- If-Match on updateOrganization and deleteOrganization.
ALTER TABLE organizations ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
-- Who created it over the API (NULL: the operator or an import), for
-- the hourly bound on organizations a user creates.
ALTER TABLE organizations ADD COLUMN created_by TEXT;
CREATE INDEX organizations_created_by ON organizations (created_by, created_at) WHERE created_by IS NOT NULL;

-- If-Match on updateOrganizationUser and deleteOrganizationUser.
ALTER TABLE memberships ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
-- An organization's members, as listOrganizationsUsers pages them: by
-- when they joined, of one role or of all.
DROP INDEX memberships_by_organization;
CREATE INDEX memberships_members ON memberships (organization_id, created_at, user_id);
CREATE INDEX memberships_members_by_role ON memberships (organization_id, role, created_at, user_id);

-- What updateUser sets, and If-Match on it.
ALTER TABLE users ADD COLUMN avatar_url TEXT;
ALTER TABLE users ADD COLUMN terms_version TEXT;
ALTER TABLE users ADD COLUMN privacy_version TEXT;
ALTER TABLE users ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
-- The user an accepted invitation names by its email (compared in lower
-- case).
CREATE INDEX users_email ON users (lower(email));

-- An invitation: a single-use secret (only its SHA-256 digest is kept),
-- bound to an email and a role in an organization, until `expires_at`.
-- Accepted or deleted ones keep their row (`accepted_at`, `deleted_at`):
-- the hourly bound on invitations counts them too.
CREATE TABLE invitations (
    id              TEXT    NOT NULL PRIMARY KEY,
    organization_id TEXT    NOT NULL REFERENCES organizations (id),
    email           TEXT    NOT NULL,
    role            TEXT    NOT NULL CHECK (role IN ('admin', 'editor', 'member')),
    digest          BLOB    NOT NULL UNIQUE,
    created_by      TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    accepted_at     INTEGER,
    accepted_by     TEXT,
    deleted_at      INTEGER
) STRICT;
-- listInvitations' pages of one organization, and the hourly count.
CREATE INDEX invitations_by_organization ON invitations (organization_id, created_at, id);
-- The invitations of one address, locked together by an acceptance.
CREATE INDEX invitations_by_email ON invitations (lower(email));
