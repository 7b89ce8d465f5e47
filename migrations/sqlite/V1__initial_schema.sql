-- proxydeck schema, version 1 (SQLite).
-- Timestamps are integer milliseconds since the Unix epoch, UTC.

CREATE TABLE organizations (
    id         TEXT    NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE users (
    id         TEXT    NOT NULL PRIMARY KEY,
    email      TEXT    NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE memberships (
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL REFERENCES organizations (id),
    PRIMARY KEY (user_id, organization_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX memberships_by_organization ON memberships (organization_id);

-- `body` is the project exactly as listings show it, written once when the
-- project is imported and sent without re-parsing.
-- `deleted_at` marks a removed project: it leaves every listing, but its id
-- still resolves as a `start_key`, so a walk under way goes on.
CREATE TABLE projects (
    id              TEXT    NOT NULL PRIMARY KEY,
    organization_id TEXT    NOT NULL REFERENCES organizations (id),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    deleted_at      INTEGER,
    body            TEXT    NOT NULL
) STRICT;

CREATE INDEX projects_listing ON projects (organization_id, created_at, id)
    WHERE deleted_at IS NULL;

CREATE TABLE proxy_settings (
    project_id TEXT    NOT NULL REFERENCES projects (id),
    revision   INTEGER NOT NULL CHECK (revision >= 1),
    is_active  INTEGER NOT NULL CHECK (is_active IN (0, 1)),
    body       TEXT    NOT NULL,
    PRIMARY KEY (project_id, revision)
) STRICT;

-- At most one active revision per project.
CREATE UNIQUE INDEX proxy_settings_one_active ON proxy_settings (project_id)
    WHERE is_active = 1;

-- Only the SHA-256 digest of a token is kept; `hint` is what listings show.
-- Revoked tokens keep their row (`revoked_at`) so their id still resolves
-- as a `start_key`.
CREATE TABLE api_tokens (
    id           TEXT    NOT NULL PRIMARY KEY,
    user_id      TEXT    NOT NULL REFERENCES users (id),
    name         TEXT    NOT NULL,
    from_browser INTEGER NOT NULL CHECK (from_browser IN (0, 1)),
    digest       BLOB    NOT NULL UNIQUE,
    hint         TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    expires_at   INTEGER,
    last_used_at INTEGER,
    revoked_at   INTEGER
) STRICT;

CREATE INDEX api_tokens_listing ON api_tokens (user_id, created_at, id)
    WHERE revoked_at IS NULL;
CREATE INDEX api_tokens_by_name ON api_tokens (user_id, name, created_at, id)
    WHERE revoked_at IS NULL;
