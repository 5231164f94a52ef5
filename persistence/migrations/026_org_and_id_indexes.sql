-- Rows read by their ids within an organisation (`org_id = $1 and id = any($2)`: a card's
-- description, its claim, the comments, screenshots and archived cards a change page names)
-- are found through one index on (org_id, id), the organisation and each id in the index
-- condition. With an index on org_id alone, a generic plan (a prepared statement's from its
-- sixth call on, for the connection's life) estimates `org_id = $1` by the average
-- organisation; when that is small it reads every row of the organisation and filters the
-- ids, so a large organisation among small ones paid for all its cards at each lookup.
-- The indexes on org_id alone are replaced (the new ones lead with it); the others keep
-- theirs and gain one.
create index claims_org_task on claims (org_id, task_id);
drop index claims_org;
create index task_texts_org_id on task_texts (org_id, id);
drop index task_texts_org;
create index comments_org_id on comments (org_id, id);
create index attachments_org_id on attachments (org_id, id);
create index archived_tasks_org_id on archived_tasks (org_id, id);
