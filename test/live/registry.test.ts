import { Hocuspocus } from '@hocuspocus/server'
import { afterEach, describe, expect, test } from 'vitest'
import { DocRegistry, gone } from '../../server/live/doc-registry.ts'

/**
 * The server's hold on live documents (server/live/registry.ts), against a real Hocuspocus
 * instance. A destroyed Y.Doc drops its listeners, so a write computed on one would be
 * acknowledged yet never stored nor shown: the registry must never hand one out, and a
 * stale copy must never take the live one out of Hocuspocus's map.
 */
describe('the server never works on a document that is no longer the live one', () => {
  const quiet = { error: () => {}, warn: () => {}, info: () => {} }
  let hocuspocus: Hocuspocus
  afterEach(async () => {
    await hocuspocus?.closeConnections()
  })

  test('an evicted copy unloading late leaves its successor live', async () => {
    hocuspocus = new Hocuspocus({ quiet: true })
    const registry = new DocRegistry({ hocuspocus, idleMs: 10, log: quiet })
    // A person's hold on the first copy (a direct connection stands in for their socket);
    // the server used it and let it go.
    const person = await hocuspocus.openDirectConnection('org/doc', {})
    const first = await registry.acquire('org/doc')
    expect(first.doc).toBe(person.document)
    registry.release(first)
    await new Promise((r) => setTimeout(r, 50))
    registry.evict(['org/doc'])
    expect(gone(first)).toBe(true)
    const second = await registry.acquire('org/doc')
    expect(second.doc).not.toBe(first.doc)
    // The person's connection to the evicted copy closes only now.
    await person.disconnect()
    expect(hocuspocus.documents.get('org/doc')).toBe(second.doc)
    expect(second.doc.isDestroyed).toBe(false)
  })

  test('a document unloaded while the server opens it is loaded again, never handed out destroyed', async () => {
    hocuspocus = new Hocuspocus({ quiet: true })
    const registry = new DocRegistry({ hocuspocus, idleMs: 60_000, log: quiet })
    // The person's last connection closes, and the server opens the document some
    // microtasks into that unload: every interleaving of the two, one per round.
    for (let delay = 0; delay < 60; delay++) {
      const name = `org/doc-${delay}`
      const person = await hocuspocus.openDirectConnection(name, {})
      const leaving = person.disconnect()
      for (let i = 0; i < delay; i++) await Promise.resolve()
      const entry = await registry.acquire(name)
      await leaving
      expect(entry.doc.isDestroyed).toBe(false)
      expect(hocuspocus.documents.get(name)).toBe(entry.doc)
      registry.release(entry)
    }
  })

  test('an entry whose document was destroyed under it is acquired anew', async () => {
    hocuspocus = new Hocuspocus({ quiet: true })
    const registry = new DocRegistry({ hocuspocus, idleMs: 60_000, log: quiet })
    const first = await registry.acquire('org/doc')
    registry.release(first)
    // Destroyed behind the registry's back (as Hocuspocus's own unload does).
    hocuspocus.documents.delete('org/doc')
    first.doc.destroy()
    const second = await registry.acquire('org/doc')
    expect(second.doc.isDestroyed).toBe(false)
    expect(hocuspocus.documents.get('org/doc')).toBe(second.doc)
  })
})
