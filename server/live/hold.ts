import { Document } from '@hocuspocus/server'

/**
 * Holds a server write's updates back from Hocuspocus (its broadcast and Redis publish)
 * until the write commits, so a failed write is seen by nobody (docs/design.md, "One copy of
 * each document, and no dirty reads"). The one patch of Hocuspocus internals: it replaces
 * Document.handleUpdate; test/live/write-atomicity.test.ts fails if it ever stops holding.
 */

type HandleUpdate = (this: Document, update: Uint8Array, origin: unknown) => unknown

interface Patchable {
  handleUpdate: HandleUpdate
}

const proto = Document.prototype as unknown as Patchable
const PATCHED = Symbol.for('corkboard.heldUpdates')
const marked = proto as unknown as Record<symbol, HandleUpdate | undefined>

/** The original handler (the patch installs itself once per process, whoever imports it). */
const original: HandleUpdate =
  marked[PATCHED] ??
  (() => {
    const handler = proto.handleUpdate
    if (typeof handler !== 'function') {
      throw new Error('@hocuspocus/server changed: Document.handleUpdate is gone')
    }
    return handler
  })()

/** Per held origin, the updates it made, in order. */
const held = new WeakMap<object, { doc: Document; update: Uint8Array }[]>()

if (!marked[PATCHED]) {
  marked[PATCHED] = original
  proto.handleUpdate = function (this: Document, update: Uint8Array, origin: unknown) {
    const list = typeof origin === 'object' && origin !== null ? held.get(origin) : undefined
    if (list) {
      list.push({ doc: this, update })
      return this
    }
    return original.call(this, update, origin)
  }
}

/** From now on, updates made with `origin` wait instead of reaching connections. */
export function hold(origin: object): void {
  held.set(origin, [])
}

/** The updates `origin` made so far, per document, in order. */
export function heldUpdates(origin: object): readonly { doc: Document; update: Uint8Array }[] {
  return held.get(origin) ?? []
}

/**
 * Lets `origin`'s updates through, in the order they were made: each is broadcast and
 * handed to the hooks exactly as if it had just happened. A document destroyed meanwhile
 * (evicted) gets nothing.
 */
export function release(origin: object): void {
  const list = held.get(origin)
  held.delete(origin)
  for (const { doc, update } of list ?? []) {
    if (!doc.isDestroyed) original.call(doc, update, origin)
  }
}

/** Forgets `origin`'s updates: nobody will see them (their documents are evicted). */
export function drop(origin: object): void {
  held.delete(origin)
}
