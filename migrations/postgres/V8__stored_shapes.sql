-- The shape of the JSON bodies the store keeps: see migrations/sqlite/V8.
CREATE TABLE stored_shapes (
    kind    TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    version BIGINT NOT NULL
);
INSERT INTO stored_shapes (kind, version) VALUES ('project', 1);
