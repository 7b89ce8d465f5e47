-- Custom domains (docs/domains.md): a project's host names, each with
-- the token its TXT record must hold and where its verification stands.
-- `name` is the one ASCII form (domain/host_name.rs). A name is at most
-- once in an organization, and verified (it routes) in one organization
-- at most: the partial unique index is the last word when two checks
-- verify it at once.
CREATE TABLE domains (
    project_id          TEXT    NOT NULL,
    name                TEXT    NOT NULL,
    organization_number INTEGER NOT NULL,
    token               TEXT    NOT NULL,
    verified            INTEGER NOT NULL CHECK (verified IN (0, 1)),
    ssl                 INTEGER NOT NULL CHECK (ssl IN (0, 1)),
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    version             INTEGER NOT NULL,
    last_result         TEXT,
    checked_at          INTEGER,
    -- When the background checks look next; NULL: not until asked.
    next_check_at       INTEGER,
    -- Checks in a row that did not find the record (the backoff).
    misses              INTEGER NOT NULL,
    -- Verified, and the record not found since then.
    missing_since       INTEGER,
    PRIMARY KEY (project_id, name)
) STRICT;
CREATE UNIQUE INDEX domains_verified_name ON domains (name) WHERE verified = 1;
CREATE UNIQUE INDEX domains_organization_name ON domains (organization_number, name);
-- Who else claims or holds a name (bound parameters cannot use the
-- partial index above on SQLite).
CREATE INDEX domains_name ON domains (name);
CREATE INDEX domains_due ON domains (next_check_at) WHERE next_check_at IS NOT NULL;

-- A domain's change names it.
ALTER TABLE changes ADD COLUMN domain TEXT;
