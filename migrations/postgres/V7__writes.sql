-- The management API's writes: see migrations/sqlite/V7.
ALTER TABLE projects ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE proxy_settings ADD COLUMN version BIGINT NOT NULL DEFAULT 1;

ALTER TABLE projects ADD COLUMN slug TEXT COLLATE "C" NOT NULL DEFAULT '';
UPDATE projects SET slug = COALESCE(body::json ->> 'slug', '');
CREATE INDEX projects_slug ON projects (organization_id, slug) WHERE deleted_at IS NULL;

CREATE TABLE audit_log (
    seq            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at             BIGINT NOT NULL,
    user_id        TEXT COLLATE "C" NOT NULL,
    token_id       TEXT COLLATE "C" NOT NULL,
    request_id     TEXT NOT NULL,
    operation      TEXT NOT NULL,
    object         TEXT NOT NULL,
    object_id      TEXT COLLATE "C" NOT NULL,
    version_before BIGINT,
    version_after  BIGINT
);
CREATE INDEX audit_log_at ON audit_log (at, seq);
CREATE INDEX audit_log_user ON audit_log (user_id, at, seq);
CREATE INDEX audit_log_object ON audit_log (object_id, at, seq);

CREATE TABLE idempotency_keys (
    user_id    TEXT COLLATE "C" NOT NULL,
    operation  TEXT COLLATE "C" NOT NULL,
    key        TEXT COLLATE "C" NOT NULL,
    digest     TEXT   NOT NULL,
    status     BIGINT NOT NULL,
    answer     TEXT   NOT NULL,
    version    BIGINT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, operation, key)
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);
