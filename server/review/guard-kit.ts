import * as Y from 'yjs'
import { replaceText } from '../../shared/ytext.ts'

/**
 * What the guards (board, card and map) share. Hocuspocus cannot veto an update, so each
 * guard runs synchronously after a transaction from a connection and puts back whatever
 * broke a rule, in one compensating transaction, from the last valid state it keeps in
 * memory beside the document (so the revert path has no await).
 */

export type Json = Record<string, unknown>

/** Why an edit of a document's `meta` (its generation) is reverted. */
export const GENERATION_IS_THE_SERVERS = "a document's generation is written by the server only"

/** Who made an edit: the session's person, or a program on an API key. */
export interface Editor {
  email: string
  /** Set for a connection opened with an API key: that key's claims do not lock it out. */
  keyId?: string | undefined
}

export function snapshot(m: Y.Map<unknown>): Json {
  const out: Json = {}
  m.forEach((v, k) => {
    out[k] = v instanceof Y.Text ? v.toString() : v instanceof Y.AbstractType ? v.toJSON() : v
  })
  return out
}

/** A fresh Y.Map holding a snapshot (text keys become a Y.Text again). */
export function rebuild(s: Json, textKeys: readonly string[] = []): Y.Map<unknown> {
  const m = new Y.Map<unknown>()
  for (const [k, v] of Object.entries(s))
    m.set(k, textKeys.includes(k) ? new Y.Text(String(v ?? '')) : v)
  return m
}

export const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/** The root map and key an edited type belongs to (a card's description resolves to the card). */
export function locate(type: object, roots: Map<object, string>): [string, string] | undefined {
  let t: object | null = type
  let key: string | null = null
  while (t) {
    const root = roots.get(t)
    if (root) return key === null ? undefined : [root, key]
    const item: Y.Item | null = (t as { _item: Y.Item | null })._item
    if (!item || item.deleted) return undefined
    key = item.parentSub
    t = item.parent as object | null
  }
  return undefined
}

/** The entities a transaction touched, as [root name, key] pairs (nested edits resolve to their entity). */
export function touchedEntities(tr: Y.Transaction, roots: Map<object, string>): [string, string][] {
  const out = new Map<string, [string, string]>()
  for (const [type, keys] of tr.changed) {
    const root = roots.get(type)
    if (root) {
      for (const key of keys) if (key !== null) out.set(`${root}/${key}`, [root, key])
      continue
    }
    const at = locate(type, roots)
    if (at) out.set(`${at[0]}/${at[1]}`, at)
  }
  return [...out.values()]
}

/**
 * Clears the root types a transaction touched that are none of `roots`: our documents
 * hold only their named maps, so anything a client puts elsewhere is undone (it would
 * otherwise sit in the document, and in every replica, for ever). Returns how many.
 */
/** The parts of a Yjs type this needs: its parent item, sequence start and map entries. */
interface TypeLike {
  _item: Y.Item | null
  _start: Y.Item | null
  _map: Map<string, Y.Item>
}

export function clearStrayRoots(doc: Y.Doc, tr: Y.Transaction, roots: Map<object, string>): number {
  const stray = new Set<TypeLike>()
  for (const type of tr.changed.keys()) {
    let t: TypeLike = type
    while (t._item) t = t._item.parent as unknown as TypeLike
    if (!roots.has(t)) stray.add(t)
  }
  for (const root of stray) {
    const name = [...doc.share].find(([, t]) => t === root)?.[0]
    if (name === undefined) continue
    if (root._start !== null) {
      const sequence = root instanceof Y.Text ? root : doc.getArray(name)
      if (sequence.length > 0) sequence.delete(0, sequence.length)
    }
    if (root._map.size > 0) {
      const map = root instanceof Y.Map ? root : doc.getMap(name)
      for (const key of [...map.keys()]) map.delete(key)
    }
  }
  return stray.size
}

/**
 * The last valid state of every entity of some root maps, kept beside a document: what a
 * revert puts back. Entities that are Y.Maps are kept as snapshots, plain values as they are.
 */
type Saved = { map: Json } | { value: unknown }

export class LastValid {
  private readonly roots: Map<object, string>
  /** The roots a document may hold: the maps, and others its guard reviews itself. */
  private readonly known: Map<object, string>
  private readonly maps: Record<string, Y.Map<unknown>>
  private readonly entries = new Map<string, Map<string, Saved>>()

  /**
   * `maps`: the document's root maps by name (any value type: entries are read as unknown);
   * `others`: its other roots (a card's description), which clearStray leaves alone.
   */
  constructor(maps: Record<string, object>, others: readonly object[] = []) {
    this.maps = maps as Record<string, Y.Map<unknown>>
    this.roots = new Map(Object.entries(maps).map(([name, m]) => [m, name]))
    this.known = new Map([
      ...this.roots,
      ...others.map((o, i): [object, string] => [o, `other:${i}`]),
    ])
    for (const [name, root] of Object.entries(this.maps)) {
      const entries = new Map<string, Saved>()
      root.forEach((v, k) => {
        entries.set(k, v instanceof Y.Map ? { map: snapshot(v) } : { value: v })
      })
      this.entries.set(name, entries)
    }
  }

  touched(tr: Y.Transaction): [string, string][] {
    return touchedEntities(tr, this.roots)
  }

  /** Undoes what a transaction put outside the known roots (see clearStrayRoots). */
  clearStray(doc: Y.Doc, tr: Y.Transaction): number {
    return clearStrayRoots(doc, tr, this.known)
  }

  /** The last valid snapshot of an entity that is a Y.Map. */
  get(root: string, key: string): Json | undefined {
    const saved = this.entries.get(root)?.get(key)
    return saved && 'map' in saved ? saved.map : undefined
  }

  keys(root: string): string[] {
    return [...(this.entries.get(root)?.keys() ?? [])]
  }

  /** Records an entity's current state as valid (or its absence). */
  remember(root: string, key: string): void {
    const value = this.maps[root]?.get(key)
    const entries = this.entries.get(root)
    if (!entries) return
    if (value === undefined) entries.delete(key)
    else entries.set(key, value instanceof Y.Map ? { map: snapshot(value) } : { value })
  }

  rememberAll(tr: Y.Transaction): void {
    for (const [root, key] of this.touched(tr)) this.remember(root, key)
  }

  /** Puts an entity back to its last valid state (re-creating it, or removing a new one). */
  restore(root: string, key: string, textKeys: readonly string[] = []): void {
    const map = this.maps[root]
    if (!map) return
    const saved = this.entries.get(root)?.get(key)
    const current = map.get(key)
    if (!saved) {
      if (current !== undefined) map.delete(key)
    } else if ('value' in saved) {
      if (!same(current, saved.value)) map.set(key, saved.value)
    } else if (current instanceof Y.Map) {
      for (const k of [...current.keys()]) if (!(k in saved.map)) current.delete(k)
      for (const [k, v] of Object.entries(saved.map)) setField(current, k, v, textKeys)
    } else map.set(key, rebuild(saved.map, textKeys))
  }
}

/** Sets a field only when it differs (every overwrite leaves a tombstone for ever). */
export function setField(
  m: Y.Map<unknown>,
  k: string,
  v: unknown,
  textKeys: readonly string[] = [],
): void {
  if (textKeys.includes(k)) {
    const text = m.get(k)
    const value = String(v ?? '')
    if (text instanceof Y.Text) {
      if (text.toString() !== value) replaceText(text, value)
    } else m.set(k, new Y.Text(value))
    return
  }
  if (!same(m.get(k), v)) m.set(k, v)
}
