import type { Document } from '@hocuspocus/server'
import type { Logger } from '../http/json.ts'
import type { WriteOrigin } from './origins.ts'
import type { PeopleReport } from './pending-edits.ts'
import type { WriteScope } from './write-scope.ts'

/**
 * What reviews people's edits as they arrive (server/review/), plugged into the engine as a
 * Hocuspocus extension plugs into its server: the engine calls these hooks, and never
 * knows what a board, a card or a map allows.
 */
export interface EditReviewer {
  /** A document just loaded (its stored content and pending edits applied): watch it from now. */
  watch(document: Document): void
  /** A person's sync message is about to be applied to `document`. */
  prepare(document: Document): void
}

/** What the engine offers its reviewer. */
export interface ReviewHost {
  /**
   * An organisation's reviewed edits, to be stored by the next write of its lane (one is
   * scheduled if none comes): the bytes of each accepted update, and what they changed.
   */
  pending(orgId: string): {
    /** `generation`: the generation of the document the update was made on. */
    addUpdate(docName: string, update: Uint8Array, generation: number): void
    addReport(report: PeopleReport): void
  }
  log: Logger
  /** Counts people's edits reviewed and those with something reverted, by document kind. */
  observe?: {
    reviewed(kind: 'board' | 'card' | 'map'): void
    reverted(kind: 'board' | 'card' | 'map'): void
  }
  /** The loaded document of this name, if this process has it in memory. */
  loaded(docName: string): Document | undefined
  /** A server write through the organisation's lane (LiveDocs.write). */
  write<T>(
    docName: string,
    origin: WriteOrigin,
    fn: (scope: WriteScope) => Promise<T>,
    opens?: readonly string[],
  ): Promise<T>
}
