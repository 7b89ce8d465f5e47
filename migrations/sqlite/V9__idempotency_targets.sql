-- An Idempotency-Key is kept for its user, operation and target: the
-- object of the request's path (createProjectProxySettings: the project
-- id), empty for an operation whose path names none (createProject, whose
-- organization is in the body the digest covers). One key sent to two
-- projects makes a revision in each (docs/management.md).
--
-- Kept rows move over with an empty target: a createProject key goes on
-- replaying; a createProjectProxySettings key made before the upgrade no
-- longer replays (its project is not recorded), for the rest of its day.
CREATE TABLE idempotency_keys_by_target (
    user_id    TEXT    NOT NULL,
    operation  TEXT    NOT NULL,
    target     TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    digest     TEXT    NOT NULL,
    status     INTEGER NOT NULL,
    answer     TEXT    NOT NULL,
    version    INTEGER,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, operation, target, key)
) STRICT;
INSERT INTO idempotency_keys_by_target
    (user_id, operation, target, key, digest, status, answer, version, created_at)
SELECT user_id, operation, '', key, digest, status, answer, version, created_at
  FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_by_target RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);
