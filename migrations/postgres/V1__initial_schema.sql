-- proxydeck schema, version 1 (PostgreSQL). Same tables and meaning as
-- migrations/sqlite/V1; see the comments there.
-- Timestamps are integer milliseconds since the Unix epoch, UTC.
-- Ids compare byte by byte (COLLATE "C"), as SQLite compares them, so that
-- both stores order ties on created_at the same way.

CREATE TABLE organizations (
    id         TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    name       TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE users (
    id         TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    email      TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE memberships (
    user_id         TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id),
    PRIMARY KEY (user_id, organization_id)
);

CREATE INDEX memberships_by_organization ON memberships (organization_id);

CREATE TABLE projects (
    id              TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id),
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    deleted_at      BIGINT,
    body            TEXT   NOT NULL
);

CREATE INDEX projects_listing ON projects (organization_id, created_at, id)
    WHERE deleted_at IS NULL;

CREATE TABLE proxy_settings (
    project_id TEXT COLLATE "C" NOT NULL REFERENCES projects (id),
    revision   BIGINT  NOT NULL CHECK (revision >= 1),
    is_active  BOOLEAN NOT NULL,
    body       TEXT    NOT NULL,
    PRIMARY KEY (project_id, revision)
);

CREATE UNIQUE INDEX proxy_settings_one_active ON proxy_settings (project_id)
    WHERE is_active;

CREATE TABLE api_tokens (
    id           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    user_id      TEXT COLLATE "C" NOT NULL REFERENCES users (id),
    name         TEXT    NOT NULL,
    from_browser BOOLEAN NOT NULL,
    digest       BYTEA   NOT NULL UNIQUE,
    hint         TEXT    NOT NULL,
    created_at   BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL,
    expires_at   BIGINT,
    last_used_at BIGINT,
    revoked_at   BIGINT
);

CREATE INDEX api_tokens_listing ON api_tokens (user_id, created_at, id)
    WHERE revoked_at IS NULL;
CREATE INDEX api_tokens_by_name ON api_tokens (user_id, name, created_at, id)
    WHERE revoked_at IS NULL;
