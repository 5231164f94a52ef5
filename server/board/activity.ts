import type { Queryable } from '../../persistence/types.ts'
import { type ClaimFacts, presentClaim } from '../../shared/claims.ts'
import type { ClaimRecord, ClaimStatus } from '../../shared/records.ts'
import { type PreparedJson, prepareJson } from '../http/prepared-json.ts'

/**
 * get_board's `activity`: one record per card ever claimed (the specification), which an
 * organisation with a long history counts in tens of thousands. Reading and presenting
 * all of them for every get_board cost 200 ms at 20,000; so each organisation's claims are
 * kept here, per process, and each read fetches only the rows changed since the previous
 * one (migration 010: every claim row carries the transaction that last wrote it, deleted
 * ones leave a `claims_gone` row, and the reading statement's snapshot horizon says from
 * where the next read must look). A read therefore sees every claim committed before it
 * started, on any process, exactly as a full read would; the records and their JSON are
 * presented again only when a row changed or a lease passed.
 */

/** After this long without a read the next one reads everything (claims_gone keeps a day). */
const MAX_AGE_MS = 60 * 60_000
/** An organisation nobody read for this long is forgotten (its memory follows use). */
const IDLE_MS = 5 * 60_000

interface ActivityRow {
  horizon: string
  gone: boolean
  task_id: string | null
  agent_name: string | null
  house: string | null
  generation: number | null
  is_sub_child: boolean | null
  note: string | null
  started_at: string | null
  updated_at: string | null
  expires_at: string | null
  released_at: string | null
}

const ISO = (column: string) =>
  `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
const COLUMNS = `c.task_id, c.agent_name, c.house, c.generation, c.is_sub_child, c.note,
  ${ISO('c.started_at')} as started_at, ${ISO('c.updated_at')} as updated_at,
  ${ISO('c.expires_at')} as expires_at, ${ISO('c.released_at')} as released_at`
const HORIZON = 'select pg_snapshot_xmin(pg_current_snapshot())::text as horizon'

/** Every claim of the organisation, and the horizon of the statement's snapshot. */
const FULL = `with h as (${HORIZON})
  select h.horizon, false as gone, ${COLUMNS} from h left join claims c on c.org_id = $1`

/** Claims written and deleted by transactions the previous read may not have seen. */
const SINCE = `with h as (${HORIZON})
  select h.horizon, false as gone, ${COLUMNS}
    from h left join claims c on c.org_id = $1 and c.changed_in >= $2::xid8
  union all
  select h.horizon, true, g.task_id, null, null, null, null, null, null, null, null, null
    from h join claims_gone g on g.org_id = $1 and g.gone_in >= $2::xid8`

interface Entry {
  facts: ClaimFacts
  expiresMs: number
  /** What `record` and `json` were presented as; undefined until first presented. */
  status: ClaimStatus | undefined
  record: ClaimRecord | undefined
  json: string
}

function statusAt(e: Entry, now: number): ClaimStatus {
  if (e.facts.releasedAt !== null) return 'released'
  return e.expiresMs > now ? 'working' : 'lapsed'
}

/** Most recently changed first, ties by card id (as `order by updated_at desc, task_id`). */
function newestFirst(a: Entry, b: Entry): number {
  const u = a.facts.updatedAt
  const v = b.facts.updatedAt
  if (u !== v) return u < v ? 1 : -1
  return a.facts.taskId < b.facts.taskId ? -1 : a.facts.taskId > b.facts.taskId ? 1 : 0
}

class OrgActivity {
  private readonly orgId: string
  private readonly entries = new Map<string, Entry>()
  private order: Entry[] = []
  private sorted = true
  private horizon: string | undefined
  private readAt = 0
  /** The last answer and the clock interval in which every record in it stays as shown. */
  private answer: { json: PreparedJson<ClaimRecord[]>; from: number; until: number } | undefined
  /** Reads run one after another (an older snapshot never lands after a newer one). */
  private tail: Promise<void> = Promise.resolve()
  /** A read queued and not yet started: callers arriving now may share it. */
  private waiting: Promise<void> | undefined
  lastUsed = Date.now()

  constructor(orgId: string) {
    this.orgId = orgId
  }

  async read(db: Queryable, now: number): Promise<PreparedJson<ClaimRecord[]>> {
    this.lastUsed = Date.now()
    await this.refresh(db)
    const answer = this.answer
    if (answer && answer.from <= now && now < answer.until) return answer.json
    return this.present(now)
  }

  /** A read that starts after this call: shared with whoever else waits for one to start. */
  private refresh(db: Queryable): Promise<void> {
    if (this.waiting) return this.waiting
    const next = this.tail
      .catch(() => {})
      .then(() => {
        this.waiting = undefined
        return this.fetch(db)
      })
    this.waiting = next
    this.tail = next
    return next
  }

  private async fetch(db: Queryable): Promise<void> {
    const full = this.horizon === undefined || Date.now() - this.readAt > MAX_AGE_MS
    const startedAt = Date.now()
    const rows = full
      ? await db.query<ActivityRow & Record<string, unknown>>(FULL, [this.orgId])
      : await db.query<ActivityRow & Record<string, unknown>>(SINCE, [this.orgId, this.horizon])
    if (full) this.clear()
    let changed = full
    // Deletions first: a row present in the same snapshot is the claim as it is now.
    for (const r of rows) {
      if (r.gone && r.task_id && this.entries.delete(r.task_id)) changed = true
    }
    for (const r of rows) {
      if (r.gone || r.task_id === null) continue
      const facts: ClaimFacts = {
        taskId: r.task_id,
        agentName: r.agent_name,
        house: r.house,
        generation: r.generation,
        isSubChild: r.is_sub_child === true,
        note: r.note,
        startedAt: r.started_at as string,
        updatedAt: r.updated_at as string,
        expiresAt: r.expires_at as string,
        releasedAt: r.released_at,
      }
      this.entries.set(r.task_id, {
        facts,
        expiresMs: Date.parse(facts.expiresAt),
        status: undefined,
        record: undefined,
        json: '',
      })
      changed = true
    }
    const horizon = rows[0]?.horizon
    if (horizon === undefined) throw new Error('activity read returned no snapshot horizon')
    this.horizon = horizon
    this.readAt = startedAt
    if (changed) {
      this.sorted = false
      this.answer = undefined
    }
  }

  private clear(): void {
    this.entries.clear()
    this.order = []
  }

  private present(now: number): PreparedJson<ClaimRecord[]> {
    if (!this.sorted) {
      this.order = [...this.entries.values()].sort(newestFirst)
      this.sorted = true
    }
    let from = Number.NEGATIVE_INFINITY
    let until = Number.POSITIVE_INFINITY
    const records: ClaimRecord[] = []
    const texts: string[] = []
    for (const e of this.order) {
      const status = statusAt(e, now)
      if (status !== e.status || !e.record) {
        e.record = presentClaim(e.facts, now)
        e.json = JSON.stringify(e.record)
        e.status = status
      }
      if (status === 'working') until = Math.min(until, e.expiresMs)
      else if (status === 'lapsed') from = Math.max(from, e.expiresMs)
      records.push(e.record)
      texts.push(e.json)
    }
    const json = prepareJson(records, `[${texts.join(',')}]`)
    this.answer = { json, from, until }
    return json
  }
}

const caches = new WeakMap<object, Map<string, OrgActivity>>()
const lastSweep = new WeakMap<Map<string, OrgActivity>, number>()
const SWEEP_MS = 60_000

/**
 * The organisation's `activity` as of a read that starts now: every card ever claimed,
 * most recently changed first, each record's status as of `now`. `db` identifies the
 * storage (each app its own cache).
 */
export function activity(
  db: Queryable,
  orgId: string,
  now: number,
): Promise<PreparedJson<ClaimRecord[]>> {
  let orgs = caches.get(db)
  if (!orgs) {
    orgs = new Map()
    caches.set(db, orgs)
  }
  // Forgetting idle organisations walks them all: once a minute, not on every read.
  const wall = Date.now()
  if (wall - (lastSweep.get(orgs) ?? 0) > SWEEP_MS) {
    lastSweep.set(orgs, wall)
    for (const [id, org] of orgs) if (org.lastUsed < wall - IDLE_MS) orgs.delete(id)
  }
  let org = orgs.get(orgId)
  if (!org) {
    org = new OrgActivity(orgId)
    orgs.set(orgId, org)
  }
  return org.read(db, now)
}
