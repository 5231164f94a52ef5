import type * as Y from 'yjs'
import type { Db, Queryable } from '../../persistence/types.ts'

/**
 * Cards' descriptions, for presenting cards without loading their documents (version 3:
 * a description lives in its card's document, and in Postgres, task_texts, written in the
 * transaction that changes it). Kept per organisation and process, exact:
 * - a card document loaded here tells every change of its description as it happens
 *   (`set`, from the reviewer that watches every document);
 * - what this process wrote without a loaded document (a card created) is `set` on commit;
 * - when several processes share storage (Redis), `fresh` first reads the rows other
 *   processes changed since the previous read (every row carries the transaction that last
 *   wrote it, as claims do: docs/design.md, "Reads"), one indexed query.
 * An organisation unread for five minutes is forgotten, so memory follows use. A board
 * document is tied to its organisation's descriptions when it loads (`attach`), and
 * BoardView presents cards through `descriptionOf`.
 */

const IDLE_MS = 5 * 60_000
/** Archived cards' descriptions read on demand, kept at most this many per organisation. */
const MAX_ARCHIVED = 1_000

const HORIZON = 'select pg_snapshot_xmin(pg_current_snapshot())::text as horizon'

interface OrgTexts {
  texts: Map<string, string>
  /** Archived cards among `texts`, in the order they were read (the oldest go first). */
  archived: Set<string>
  /** The snapshot horizon of the last read; undefined until the first. */
  horizon: string | undefined
  loading: Promise<void> | undefined
  /** Shared: the read that starts once `loading` ends, for every call that came meanwhile. */
  next: Promise<void> | undefined
  lastUsed: number
}

/** Which organisation's descriptions each board document presents with. */
const attached = new WeakMap<Y.Doc, { descriptions: Descriptions; orgId: string }>()

/** A card's description as this process knows it ('' when unknown, or for a bare Y.Doc). */
export function descriptionOf(doc: Y.Doc, taskId: string): string {
  const at = attached.get(doc)
  return at ? at.descriptions.get(at.orgId, taskId) : ''
}

export class Descriptions {
  private readonly db: Db
  private readonly shared: boolean
  private readonly orgs = new Map<string, OrgTexts>()
  private readonly sweep: NodeJS.Timeout

  /** `shared`: other processes write the same organisations (REDIS_URL is set). */
  constructor(db: Db, options: { shared: boolean }) {
    this.db = db
    this.shared = options.shared
    this.sweep = setInterval(() => this.forgetIdle(), IDLE_MS)
    this.sweep.unref()
  }

  private org(orgId: string): OrgTexts {
    let org = this.orgs.get(orgId)
    if (!org) {
      org = {
        texts: new Map(),
        archived: new Set(),
        horizon: undefined,
        loading: undefined,
        next: undefined,
        lastUsed: Date.now(),
      }
      this.orgs.set(orgId, org)
    }
    org.lastUsed = Date.now()
    return org
  }

  /** Ties a board document to its organisation's descriptions (BoardView reads through it). */
  attach(doc: Y.Doc, orgId: string): void {
    attached.set(doc, { descriptions: this, orgId })
  }

  /**
   * Brings an organisation's descriptions up to date with storage before a read or a write
   * presents cards: the first time, every card on the board; then, when processes share
   * storage, the rows changed since.
   */
  async fresh(orgId: string): Promise<void> {
    const org = this.org(orgId)
    for (;;) {
      if (org.horizon !== undefined && !this.shared) return
      if (!org.loading) return this.startRead(orgId, org)
      if (!this.shared) {
        await org.loading.catch(() => {})
        continue
      }
      // The read under way may have started before this call: the next one has not, and
      // every call arriving meanwhile shares it (one round trip for a burst of writes).
      org.next ??= org.loading
        .catch(() => {})
        .then(() => {
          org.next = undefined
          return this.startRead(orgId, org)
        })
      return org.next
    }
  }

  private startRead(orgId: string, org: OrgTexts): Promise<void> {
    const read = this.read(orgId, org)
    org.loading = read
    return read.finally(() => {
      if (org.loading === read) org.loading = undefined
    })
  }

  private async read(orgId: string, org: OrgTexts): Promise<void> {
    const first = org.horizon === undefined
    const rows = await this.db.lane.query<{
      horizon: string
      id: string | null
      description: string | null
      archived: boolean | null
    }>(
      first
        ? `with h as (${HORIZON}) select h.horizon, t.id, t.description, t.archived
             from h left join task_texts t on t.org_id = $1 and not t.archived`
        : `with h as (${HORIZON}) select h.horizon, t.id, t.description, t.archived
             from h left join task_texts t on t.org_id = $1 and t.changed_in >= $2::xid8`,
      first ? [orgId] : [orgId, org.horizon],
    )
    for (const r of rows) {
      if (r.id === null || r.description === null) continue
      // What a document here said meanwhile is newer than a first read of storage.
      if (first && org.texts.has(r.id)) continue
      // An archived card stays only if it was asked for (get_task of it).
      if (r.archived && !org.texts.has(r.id)) continue
      org.texts.set(r.id, r.description)
    }
    const horizon = rows[0]?.horizon
    if (horizon !== undefined) org.horizon = horizon
  }

  /**
   * Makes sure these cards' descriptions are known (archived cards are not kept until asked
   * for); `q` is the write's transaction when it runs inside one.
   */
  async load(orgId: string, ids: readonly string[], q: Queryable = this.db): Promise<void> {
    const org = this.org(orgId)
    const missing = ids.filter((id) => !org.texts.has(id))
    if (missing.length === 0) return
    const rows = await q.query<{ id: string; description: string }>(
      'select id, description from task_texts where org_id = $1 and id = any($2::uuid[])',
      [orgId, missing],
    )
    for (const r of rows) {
      org.texts.set(r.id, r.description)
      org.archived.add(r.id)
    }
    for (const id of org.archived) {
      if (org.archived.size <= MAX_ARCHIVED) break
      org.archived.delete(id)
      org.texts.delete(id)
    }
  }

  /** A card's description, as this process knows it now. */
  get(orgId: string, taskId: string): string {
    return this.org(orgId).texts.get(taskId) ?? ''
  }

  /** A card's description changed here (its document, or a write storing it). */
  set(orgId: string, taskId: string, text: string): void {
    this.org(orgId).texts.set(taskId, text)
  }

  /**
   * Forgets what this process knows of an organisation's descriptions: its next read takes
   * them all from storage again (an import wrote them without a document here).
   */
  forget(orgId: string): void {
    this.orgs.delete(orgId)
  }

  private forgetIdle(): void {
    const cutoff = Date.now() - IDLE_MS
    for (const [orgId, org] of this.orgs) {
      if (org.lastUsed < cutoff && !org.loading) this.orgs.delete(orgId)
    }
  }

  close(): void {
    clearInterval(this.sweep)
    this.orgs.clear()
  }
}
