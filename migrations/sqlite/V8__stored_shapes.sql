-- The shape of the JSON bodies the store keeps, by kind of object
-- (src/store/sql/shapes.rs). When a domain type gains or changes a member,
-- the code's shape number goes up, and the store rewrites the older bodies
-- through the domain type when it opens, then records the new number.
CREATE TABLE stored_shapes (
    kind    TEXT    NOT NULL PRIMARY KEY,
    version INTEGER NOT NULL
) STRICT;
INSERT INTO stored_shapes (kind, version) VALUES ('project', 1);
