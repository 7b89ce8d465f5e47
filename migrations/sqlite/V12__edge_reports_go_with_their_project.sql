-- Edge reports go with their project (issue 44): deleting a project now
-- removes its reports in the same transaction; these are the reports of
-- projects deleted before.
DELETE FROM edge_reports
 WHERE project_id IN (SELECT id FROM projects WHERE deleted_at IS NOT NULL);
