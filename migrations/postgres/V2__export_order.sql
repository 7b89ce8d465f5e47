-- Export walks organizations, users and projects in creation order, and
-- each project's proxy settings by revision, without sorting.
CREATE INDEX organizations_created ON organizations (created_at, id);
CREATE INDEX users_created ON users (created_at, id);
CREATE INDEX projects_created ON projects (created_at, id) WHERE deleted_at IS NULL;
