-- An Idempotency-Key is kept for its user, operation and target: the
-- object of the request's path (createProjectProxySettings: the project
-- id), empty for an operation whose path names none (createProject, whose
-- organization is in the body the digest covers). One key sent to two
-- projects makes a revision in each (docs/management.md).
--
-- Kept rows stay with an empty target: a createProject key goes on
-- replaying; a createProjectProxySettings key made before the upgrade no
-- longer replays (its project is not recorded), for the rest of its day.
ALTER TABLE idempotency_keys ADD COLUMN target TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (user_id, operation, target, key);
