import * as Y from 'yjs'
import type { TaskStats } from '../../shared/records.ts'
import type { ChangeKind, DomainEvent } from './events.ts'
import type { WriteOrigin } from './origins.ts'
import type { ArchivedRow, RowOp } from './write-record.ts'

/**
 * People's edits of one organisation's documents that are live (applied, broadcast) but
 * not yet stored: their update bytes, and what the guards made of them (change rows,
 * history rows, webhook events). Hocuspocus acknowledges a person's edit in memory; the
 * next write of the organisation's lane stores everything pending here in its own
 * transaction, ahead of its own record, so storage always holds what the documents were
 * built on. A failed commit puts the items back, to be stored by the next attempt.
 */
/**
 * What people's edits not yet stored do to an archived card's row: `record` when they put
 * the whole row (null: it goes), `stats` when they changed its stats after that.
 */
export interface PendingArchived {
  record?: ArchivedRow | null
  stats?: TaskStats
}

export interface PeopleReport {
  origin: WriteOrigin
  changes: { kind: ChangeKind; entityId: string }[]
  events: DomainEvent[]
  ops: RowOp[]
}

interface Item {
  doc?: string
  update?: Uint8Array
  /** The generation of the document the update was made on. */
  generation?: number
  report?: PeopleReport
  inFlight: boolean
}

/** Items taken by one write: stored with it, or put back when it fails. */
export interface TakenPeople {
  /** Per document (and generation), the updates merged. */
  updates: { doc: string; update: Uint8Array; generation: number }[]
  reports: PeopleReport[]
  /** They were stored: forget them. */
  done(): void
  /** They were not: the next write takes them again. */
  restore(): void
}

export class PeoplePending {
  private items: Item[] = []

  get size(): number {
    return this.items.length
  }

  /** Something not yet taken by a write in flight. */
  get waiting(): boolean {
    return this.items.some((i) => !i.inFlight)
  }

  addUpdate(doc: string, update: Uint8Array, generation: number): void {
    this.items.push({ doc, update, generation, inFlight: false })
  }

  addReport(report: PeopleReport): void {
    this.items.push({ report, inFlight: false })
  }

  /** Takes everything not already in flight, in order; undefined when there is nothing. */
  take(): TakenPeople | undefined {
    const taken = this.items.filter((i) => !i.inFlight)
    if (taken.length === 0) return undefined
    for (const i of taken) i.inFlight = true
    const perDoc = new Map<string, { doc: string; generation: number; list: Uint8Array[] }>()
    const reports: PeopleReport[] = []
    for (const i of taken) {
      if (i.doc && i.update) {
        const generation = i.generation ?? 0
        const key = `${generation}:${i.doc}`
        const entry = perDoc.get(key) ?? { doc: i.doc, generation, list: [] }
        entry.list.push(i.update)
        perDoc.set(key, entry)
      }
      if (i.report) reports.push(i.report)
    }
    const set = new Set(taken)
    return {
      updates: [...perDoc.values()].map(({ doc, generation, list }) => ({
        doc,
        update: list.length === 1 ? (list[0] as Uint8Array) : Y.mergeUpdates(list),
        generation,
      })),
      reports,
      done: () => {
        this.items = this.items.filter((i) => !set.has(i))
      },
      restore: () => {
        for (const i of taken) i.inFlight = false
      },
    }
  }

  /** Forgets a deleted document's pending updates (what was stored is deleted with it). */
  forgetDoc(doc: string): void {
    this.items = this.items.filter((i) => i.doc !== doc || i.inFlight)
  }

  /**
   * What the pending reports, in flight or not, do to archived card `id`'s row, in order:
   * a write reading the row from storage reads it as these will leave it (they are stored
   * ahead of the write, but after it has read).
   */
  archived(id: string): PendingArchived {
    return this.archivedAll().get(id) ?? {}
  }

  /** The same for every archived card that pending reports touch. */
  archivedAll(): Map<string, PendingArchived> {
    const all = new Map<string, PendingArchived>()
    for (const i of this.items) {
      for (const op of i.report?.ops ?? []) {
        if (op.t !== 'archived' && op.t !== 'archived_stats') continue
        const out = all.get(op.id) ?? {}
        if (op.t === 'archived') {
          out.record = op.rec
          delete out.stats
        } else out.stats = op.rec
        all.set(op.id, out)
      }
    }
    return all
  }

  /** Every pending update of one document, stored or in flight: a reload applies them. */
  updatesOf(doc: string): Uint8Array[] {
    return this.items.flatMap((i) => (i.doc === doc && i.update ? [i.update] : []))
  }
}
