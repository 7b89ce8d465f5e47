-- Custom domains: see migrations/sqlite/V14.
CREATE TABLE domains (
    project_id          TEXT COLLATE "C" NOT NULL,
    name                TEXT COLLATE "C" NOT NULL,
    organization_number BIGINT  NOT NULL,
    token               TEXT    NOT NULL,
    verified            BOOLEAN NOT NULL,
    ssl                 BOOLEAN NOT NULL,
    created_at          BIGINT  NOT NULL,
    updated_at          BIGINT  NOT NULL,
    version             BIGINT  NOT NULL,
    last_result         TEXT,
    checked_at          BIGINT,
    next_check_at       BIGINT,
    misses              BIGINT  NOT NULL,
    missing_since       BIGINT,
    PRIMARY KEY (project_id, name)
);
CREATE UNIQUE INDEX domains_verified_name ON domains (name) WHERE verified;
CREATE UNIQUE INDEX domains_organization_name ON domains (organization_number, name);
-- Who else claims or holds a name (bound parameters cannot use the
-- partial index above on SQLite).
CREATE INDEX domains_name ON domains (name);
CREATE INDEX domains_due ON domains (next_check_at) WHERE next_check_at IS NOT NULL;

ALTER TABLE changes ADD COLUMN domain TEXT COLLATE "C";
