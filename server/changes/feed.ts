import type { Queryable } from '../../persistence/types.ts'
import type { ChangeKind } from '../live/events.ts'

/**
 * The change log read as get_changes pages. Rows are stamped with their writing
 * transaction's start (`now()`), so a row can become visible long after its timestamp: a
 * writer that waited on a lock or a slow fsync commits a row stamped in the past. A cursor
 * of plain "now minus one second" would then step over it. The cursor here is never later
 * than now minus one second AND never later than the start of the oldest transaction still
 * running on any of the service's connections, so every row stamped before it has
 * committed (or never will), on every process. `since` is inclusive: a change may repeat,
 * never go missing.
 *
 * Timestamps are handled as integer microseconds since the epoch (Postgres' own
 * precision), so a cursor sent back compares exactly with the rows it was cut from.
 */

/** The collections of get_changes, each with its own limit. */
export const STREAMS = [
  { name: 'tasks', kind: 'task', viaColumn: false },
  /** Cards re-prioritised by a column set on (or off) fire: their own limit. */
  { name: 'fireTasks', kind: 'task', viaColumn: true },
  { name: 'columns', kind: 'column', viaColumn: false },
  { name: 'comments', kind: 'comment', viaColumn: false },
  { name: 'attachments', kind: 'attachment', viaColumn: false },
  { name: 'claims', kind: 'claim', viaColumn: false },
] as const satisfies readonly { name: string; kind: ChangeKind; viaColumn: boolean }[]

export type StreamName = (typeof STREAMS)[number]['name']

export interface ChangePage {
  /** ISO 8601 with microseconds; send back as `since`. */
  cursor: string
  /** Entity ids per stream, in the order of their first change in the page. */
  ids: Record<StreamName, string[]>
  /** When each entity of `ids` first changed in the page (microseconds), in the same order. */
  at: Record<StreamName, number[]>
  /** A stream filled up: the cursor stops short of the present. */
  truncated: boolean
}

/** `2025-01-02T03:04:05.123456Z` from microseconds since the epoch. */
export function isoFromMicros(us: number): string {
  const ms = Math.floor(us / 1000)
  const rest = us - ms * 1000
  return `${new Date(ms).toISOString().slice(0, -1)}${String(rest).padStart(3, '0')}Z`
}

const MICROS = (expr: string) => `(extract(epoch from ${expr}) * 1000000)::bigint`

/*
 * Timestamps go to Postgres as text (`$n::text::timestamptz`): a parameter typed
 * timestamptz is serialised by the driver through a JS Date, which would cut microseconds
 * and make a cursor compare short of the rows it was cut from.
 */

/**
 * The safe cursor and `since`, in microseconds. Backends of the same database and
 * application name are the service's own connections (every process), the only ones that
 * write change rows; this transaction itself is left out. pg_stat_activity is read before
 * any change row is: Postgres keeps a backend's xact_start until after its commit is
 * visible, so a writer is either seen running here or its rows are visible to the reads
 * that follow. The one-second margin covers a transaction that has taken its start time
 * but not yet published it.
 */
async function bounds(
  tx: Queryable,
  since: string | undefined,
): Promise<{ safe: number; since: number | undefined }> {
  const [row] = await tx.query<{ safe: number; since: number | null }>(
    `select ${MICROS(`least(
              clock_timestamp() - interval '1 second',
              coalesce((select min(xact_start) from pg_stat_activity
                         where datname = current_database() and pid <> pg_backend_pid()
                           and application_name = current_setting('application_name')),
                       'infinity'::timestamptz))`)} as safe,
            ${MICROS('$1::text::timestamptz')} as since`,
    [since ?? null],
  )
  if (!row) throw new Error('cursor query returned no row')
  return { safe: Number(row.safe), since: row.since === null ? undefined : Number(row.since) }
}

interface Scan {
  /** Entities in order of their first change at or after `since`, with that time. */
  first: [id: string, at: number][]
  /** Where the stream was cut: the first change left for the next page (or past it). */
  cutoff: number | undefined
}

/**
 * Reads one stream from `since` up to `safe`, stopping at the change that would bring a
 * (limit+1)-th entity. A cut never splits the changes of one timestamp (one write): they
 * all go to the next page. If a single write alone changed more than `limit` entities it
 * comes whole, over the limit, rather than stall the cursor.
 */
async function scanStream(
  tx: Queryable,
  orgId: string,
  stream: (typeof STREAMS)[number],
  since: number,
  safe: number,
  limit: number,
): Promise<Scan> {
  const chunk = Math.max(256, 2 * (limit + 1))
  const first = new Map<string, number>()
  let after: { at: string; id: number } | undefined
  let stopAt: number | undefined
  for (;;) {
    const rows = await tx.query<{ id: number; entity_id: string; at: number }>(
      `select id, entity_id, ${MICROS('changed_at')} as at from changes
        where org_id = $1 and kind = $2 and (via_column is not null) = $3
          and changed_at >= $4::text::timestamptz and changed_at < $5::text::timestamptz
          and ($6::text::timestamptz is null or (changed_at, id) > ($6::text::timestamptz, $7::bigint))
        order by changed_at, id
        limit $8`,
      [
        orgId,
        stream.kind,
        stream.viaColumn,
        isoFromMicros(since),
        isoFromMicros(safe),
        after?.at ?? null,
        after?.id ?? 0,
        chunk,
      ],
    )
    for (const r of rows) {
      const at = Number(r.at)
      if (first.has(r.entity_id)) continue
      if (first.size === limit) {
        stopAt = at
        break
      }
      first.set(r.entity_id, at)
    }
    const last = rows.at(-1)
    if (stopAt !== undefined || !last || rows.length < chunk) break
    after = { at: isoFromMicros(Number(last.at)), id: Number(last.id) }
  }
  if (stopAt === undefined) return { first: [...first], cutoff: undefined }
  const cut = stopAt
  const kept = [...first].filter(([, at]) => at < cut)
  if (kept.length > 0) return { first: kept, cutoff: cut }
  const group = await tx.query<{ entity_id: string }>(
    `select distinct entity_id from changes
      where org_id = $1 and kind = $2 and (via_column is not null) = $3
        and changed_at = $4::text::timestamptz
      order by entity_id`,
    [orgId, stream.kind, stream.viaColumn, isoFromMicros(cut)],
  )
  return { first: group.map((g) => [g.entity_id, cut]), cutoff: cut + 1 }
}

/** A get_changes cursor taken now: what get_changes without `since` answers. */
export async function currentCursor(q: Queryable): Promise<string> {
  const { safe } = await bounds(q, undefined)
  return isoFromMicros(safe)
}

/**
 * One page of the change feed. Without `since`: nothing, and a fresh cursor. Otherwise
 * every stream is read from `since`; the cursor is the safe point, or the earliest place a
 * stream was cut, and each stream returns exactly its entities changed before the cursor.
 */
export async function readChangePage(
  tx: Queryable,
  orgId: string,
  sinceIso: string | undefined,
  limit: number,
): Promise<ChangePage> {
  const { safe, since } = await bounds(tx, sinceIso)
  const ids = Object.fromEntries(STREAMS.map((s) => [s.name, [] as string[]])) as Record<
    StreamName,
    string[]
  >
  const at = Object.fromEntries(STREAMS.map((s) => [s.name, [] as number[]])) as Record<
    StreamName,
    number[]
  >
  if (since === undefined || since >= safe) {
    return { cursor: isoFromMicros(safe), ids, at, truncated: false }
  }
  const scans = await Promise.all(STREAMS.map((s) => scanStream(tx, orgId, s, since, safe, limit)))
  let cursor = safe
  for (const scan of scans)
    if (scan.cutoff !== undefined && scan.cutoff < cursor) cursor = scan.cutoff
  STREAMS.forEach((s, i) => {
    const kept = (scans[i]?.first ?? []).filter(([, first]) => first < cursor)
    ids[s.name] = kept.map(([id]) => id)
    at[s.name] = kept.map(([, first]) => first)
  })
  return { cursor: isoFromMicros(cursor), ids, at, truncated: cursor < safe }
}

/**
 * Logs cards whose effective priority a column's fire changed, with that column, in the
 * write's transaction (so with the same timestamp as the column's own change row).
 */
export async function recordFireChanges(
  tx: Queryable,
  orgId: string,
  columnId: string,
  taskIds: readonly string[],
): Promise<void> {
  if (taskIds.length === 0) return
  await tx.query(
    `insert into changes (org_id, kind, entity_id, via_column)
     select $1, 'task', t, $2 from unnest($3::uuid[]) as t`,
    [orgId, columnId, [...taskIds]],
  )
}
