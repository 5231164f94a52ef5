-- Rate-limit counters need no crash safety (after a crash they start again from zero, which
-- only forgives a minute of requests), so they skip the write-ahead log: every request's
-- upsert then costs no WAL write and no fsync wait at commit.
alter table rate_limits set unlogged;
