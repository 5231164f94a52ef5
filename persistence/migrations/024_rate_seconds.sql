-- The agent endpoint's rate budgets (per key, and per organisation for the image actions)
-- keep their exact sliding log in rows of one second each instead of one array per bucket.
-- The array was rewritten whole at every request: a key with a quota of thousands a minute
-- (a fleet) carried a log of thousands, which Postgres compressed and stored out of line
-- each time (17 ms a request at 12,000). A request now appends to its second's row, reads at
-- most 61 small rows, and drops the seconds that left the window. Sign-in and sign-up
-- throttles keep their arrays in rate_limits (small quotas, and hits taken back by value).
create unlogged table rate_seconds (
  bucket text not null,
  second bigint not null,
  hits bigint[] not null,
  primary key (bucket, second)
);

-- One request of `p_bucket` at `p_now` (ms): allowed while fewer than `p_quota` requests lie
-- in (p_now - p_window, p_now], and then counted. Returns, as the array form did: whether
-- it was allowed, the requests in the window after it, the oldest of them, and when refused
-- the one that must leave the window before another fits. Charges of one bucket take turns
-- (a transaction-scoped lock on its name), on any connection or process.
create function charge_rate(p_bucket text, p_now bigint, p_quota integer, p_window bigint)
returns table (allowed boolean, count integer, oldest bigint, pivot bigint)
language plpgsql as $$
declare
  v_edge bigint := p_now - p_window;
  v_edge_second bigint := v_edge / 1000;
  v_count integer;
  v_seconds bigint[];
  v_counts integer[];
  v_allowed boolean;
  v_oldest bigint;
  v_pivot bigint;
  v_at integer;
  v_i integer := 1;
begin
  perform pg_advisory_xact_lock(hashtextextended('rate ' || p_bucket, 0));
  -- Every second in the window counts whole but the one the window's edge falls in.
  select coalesce(sum(w.n), 0), array_agg(w.second order by w.second), array_agg(w.n order by w.second)
    into v_count, v_seconds, v_counts
    from (select s.second,
                 case when s.second > v_edge_second then cardinality(s.hits)
                      else (select count(*) from unnest(s.hits) h where h > v_edge)::integer end as n
            from rate_seconds s
           where s.bucket = p_bucket and s.second >= v_edge_second) w
   where w.n > 0;
  v_allowed := v_count < p_quota;
  if v_count > 0 then
    v_oldest := (select min(h) from rate_seconds s, unnest(s.hits) h
                  where s.bucket = p_bucket and s.second = v_seconds[1] and h > v_edge);
  end if;
  if v_allowed then
    insert into rate_seconds as s (bucket, second, hits) values (p_bucket, p_now / 1000, array[p_now])
      on conflict (bucket, second) do update set hits = s.hits || p_now;
    v_count := v_count + 1;
    v_oldest := least(v_oldest, p_now);
  else
    -- The (count - quota + 1)-th request of the window, in time order.
    v_at := v_count - p_quota + 1;
    while v_at > v_counts[v_i] loop
      v_at := v_at - v_counts[v_i];
      v_i := v_i + 1;
    end loop;
    v_pivot := (select h from rate_seconds s, unnest(s.hits) h
                 where s.bucket = p_bucket and s.second = v_seconds[v_i] and h > v_edge
                 order by h offset v_at - 1 limit 1);
  end if;
  delete from rate_seconds s where s.bucket = p_bucket and s.second < v_edge_second;
  return query select v_allowed, v_count, v_oldest, v_pivot;
end
$$;

-- The logs kept so far carry over, so no budget starts afresh at the upgrade.
insert into rate_seconds (bucket, second, hits)
select r.bucket, h / 1000, array_agg(h order by h)
  from rate_limits r, unnest(r.hits) h
 where r.bucket like 'key:%' or r.bucket like 'org:%'
 group by r.bucket, h / 1000;
delete from rate_limits where bucket like 'key:%' or bucket like 'org:%';
