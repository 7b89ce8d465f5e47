-- The management API's writes (docs/management.md).
--
-- Each project and each proxy-settings revision carries a version, the
-- strong ETag of its single-object answers: 1 when written first, one more
-- at every change (an import's too), checked against If-Match inside the
-- write's transaction.
ALTER TABLE projects ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE proxy_settings ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

-- A project's slug beside its body, so that "unique in its organization"
-- is one index look-up. Not a unique index: imported data made before the
-- rule may hold duplicates (and empty slugs); the writes check it.
ALTER TABLE projects ADD COLUMN slug TEXT NOT NULL DEFAULT '';
UPDATE projects SET slug = COALESCE(json_extract(body, '$.slug'), '');
CREATE INDEX projects_slug ON projects (organization_id, slug) WHERE deleted_at IS NULL;

-- Every accepted write, written in the write's own transaction. Never a
-- secret: ids, the operation and versions only.
CREATE TABLE audit_log (
    seq            INTEGER PRIMARY KEY,
    at             INTEGER NOT NULL,
    user_id        TEXT    NOT NULL,
    token_id       TEXT    NOT NULL,
    request_id     TEXT    NOT NULL,
    operation      TEXT    NOT NULL,
    object         TEXT    NOT NULL,
    object_id      TEXT    NOT NULL,
    version_before INTEGER,
    version_after  INTEGER
) STRICT;
CREATE INDEX audit_log_at ON audit_log (at, seq);
CREATE INDEX audit_log_user ON audit_log (user_id, at, seq);
CREATE INDEX audit_log_object ON audit_log (object_id, at, seq);

-- Idempotency-Key: the first 200 answer of a key, kept 24 hours for its
-- user and operation. `digest` is the SHA-256 (hex) of the request body.
CREATE TABLE idempotency_keys (
    user_id    TEXT    NOT NULL,
    operation  TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    digest     TEXT    NOT NULL,
    status     INTEGER NOT NULL,
    answer     TEXT    NOT NULL,
    version    INTEGER,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, operation, key)
) STRICT;
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);
