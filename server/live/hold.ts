import { Document } from '@hocuspocus/server'

/**
 * Holds a server write's document updates back from Hocuspocus until the write commits.
 *
 * The server keeps each document once: a write is computed on the live document itself.
 * Hocuspocus hands every update of a document to `Document.handleUpdate`, which broadcasts
 * it to the connections and runs the `onChange` hooks (the Redis extension's publish)
 * synchronously, with no way to veto or defer it. So that a write whose commit fails is
 * seen by nobody, updates made under a held origin skip `handleUpdate` and wait here; the
 * write releases them, in order, once its transaction committed, or drops them when it
 * failed (the document is then evicted and reloaded from storage: registry.ts).
 *
 * This replaces the prototype method that Document's constructor binds as its 'update'
 * listener, so it applies to every document created after this module loads. It is the
 * one place that reaches into Hocuspocus internals; the version is pinned in package.json
 * and test/live/write-atomicity.test.ts fails if an uncommitted write ever reaches a
 * provider.
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
