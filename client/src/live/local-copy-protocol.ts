/**
 * Messages between the page and the worker that keeps each live document's copy on this
 * device (local-copy.worker.ts). Every request names the IndexedDB database of one
 * document; the ones that wait for an answer carry an id the answer repeats.
 */
export type LocalCopyRequest =
  /** Read the copy: answered with everything it holds as one update (null when empty). */
  | { type: 'load'; id: number; db: string }
  /** Keep one more update (an edit made here, or what the server sent). */
  | { type: 'append'; db: string; update: Uint8Array }
  /** Forget the copy: the database is deleted. */
  | { type: 'clear'; id: number; db: string }
  /** The page no longer shows the document: let go of the database. */
  | { type: 'close'; db: string }

export type LocalCopyAnswer =
  | { type: 'loaded'; id: number; update: Uint8Array | null }
  | { type: 'cleared'; id: number }
  | { type: 'failed'; id: number; message: string }

/**
 * The layout y-indexeddb wrote, kept so that a copy written before the worker (with edits
 * made offline and not yet sent) opens as it was: one database per document, its updates
 * in `updates` under increasing keys, and a `custom` store nobody uses now.
 */
export const UPDATES_STORE = 'updates'
export const CUSTOM_STORE = 'custom'

/** Once a copy holds this many updates they are replayed into one (y-indexeddb's figure). */
export const COMPACT_AFTER = 500
