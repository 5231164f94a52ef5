-- search_tasks over the board alone (the default) reads the board's cards and their comments,
-- never the archived history: partial indexes over what is on the board. A comment carries
-- whether its card is archived (task_archived), kept by triggers in the transaction that
-- archives or restores the card (task_texts.archived, written by record_writes) or adds the
-- comment, so an organisation's long history does not slow the search of its board.
alter table comments add column task_archived boolean not null default false;
update comments c set task_archived = true
  from task_texts t
 where t.id = c.task_id and t.archived;

create index task_texts_search_board on task_texts using gin (search) where not archived;
create index comments_search_board on comments using gin (search) where not task_archived;

-- A new comment takes its card's state (a card's text row may come later in the same write:
-- its own trigger then follows).
create function comments_task_archived() returns trigger language plpgsql as $$
begin
  new.task_archived := coalesce(
    (select t.archived from task_texts t where t.id = new.task_id), false);
  return new;
end
$$;
create trigger comments_task_archived before insert on comments
  for each row execute function comments_task_archived();

-- A card archived or restored (or written archived, as an import does): its comments follow.
create function task_texts_archived_comments() returns trigger language plpgsql as $$
begin
  update comments c set task_archived = new.archived
   where c.task_id = new.id and c.task_archived <> new.archived;
  return null;
end
$$;
create trigger task_texts_archived_comments_insert after insert on task_texts
  for each row when (new.archived) execute function task_texts_archived_comments();
create trigger task_texts_archived_comments_update after update of archived on task_texts
  for each row when (old.archived <> new.archived)
  execute function task_texts_archived_comments();
