-- claim_next (server/actions/claim-next.ts): the first of the candidates, best first, whose
-- claim lock is free right now and which holds no live claim. A card whose lock another
-- transaction holds (another claim_next taking it, on any process) is skipped rather than
-- waited for, so agents racing for the best card spread over the next ones instead of
-- queueing; the lock of the card returned stays held to the end of the transaction, which
-- claims it. One round trip however many candidates are passed over. The lock key is the
-- claim locks' own (server/claims/locks.ts: key space, hashtext of the id as text).
create function claim_candidate(p_space integer, p_org_id uuid, p_tasks text[], p_now timestamptz)
returns text language plpgsql as $$
declare
  t text;
begin
  foreach t in array p_tasks loop
    -- Two statements: the claims are read with a snapshot taken after the lock is held,
    -- so every claim committed before it is seen.
    if pg_try_advisory_xact_lock(p_space, hashtext(t)) then
      if not exists (
        select 1 from claims c
         where c.task_id = t::uuid and c.org_id = p_org_id
           and c.released_at is null and c.expires_at > p_now
      ) then
        return t;
      end if;
    end if;
  end loop;
  return null;
end
$$;

-- A card deleted for good leaves the blockedBy of archived cards too (the app's delete):
-- found through this index rather than a scan of the organisation's archive.
create index archived_tasks_blocked_by on archived_tasks using gin ((record->'blockedBy'));
