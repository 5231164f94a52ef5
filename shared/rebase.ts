import * as Y from 'yjs'
import { type DocRef, parseDocName } from './doc-names.ts'
import { replaceText } from './ytext.ts'

/**
 * Re-basing a document (docs/design.md, "Re-basing a document"): removals and overwrites
 * leave tombstones for ever, so a document whose stored form they dominate starts over as
 * a new generation built from its current state alone. A replica that held the old
 * generation carries its edits across by key (a card's field, a comment, a node), never by
 * Yjs item ids: it compares its own copy with the old generation's final state (the base
 * the server keeps) and makes each difference again, as a fresh edit, on the new one.
 *
 * Server and clients share this file: the server builds generations and bases with it, the
 * app and any other program carry edits with it.
 */

/** What each root of a document kind is (a replica's other roots are strays: dropped). */
export const ROOTS = {
  board: { meta: 'map', columns: 'map', projects: 'map', tasks: 'map', claims: 'map' },
  card: { meta: 'map', description: 'text', comments: 'map', attachments: 'map' },
  map: { meta: 'map', nodes: 'map', edges: 'map' },
} as const satisfies Record<DocRef['kind'], Record<string, 'map' | 'text'>>

export type DocKind = keyof typeof ROOTS

/** A document as plain JSON, root by root (Y.Text as strings): what a base is. */
export type DocJson = Record<string, unknown>

/** The generation a replica holds: `meta.generation`, 0 for a document never re-based. */
export function generationOf(doc: Y.Doc): number {
  const g = doc.getMap('meta').get('generation')
  return typeof g === 'number' && Number.isInteger(g) && g >= 0 ? g : 0
}

/** The document's state as JSON, root by root. */
export function docJson(kind: DocKind, doc: Y.Doc): DocJson {
  const out: DocJson = {}
  for (const [name, type] of Object.entries(ROOTS[kind])) {
    out[name] = type === 'text' ? doc.getText(name).toString() : doc.getMap(name).toJSON()
  }
  return out
}

/** A Y type's content as plain values, its kind kept (what `rebuilt` copies). */
class MapState {
  readonly entries: [string, unknown][]
  constructor(entries: [string, unknown][]) {
    this.entries = entries
  }
}
class TextState {
  readonly text: string
  constructor(text: string) {
    this.text = text
  }
}
class ArrayState {
  readonly items: unknown[]
  constructor(items: unknown[]) {
    this.items = items
  }
}

/**
 * A document's current state, root by root, as plain values with each Y type marked:
 * what a new generation is built from (`rebuiltFrom`). Far lighter than the Y.Doc it was
 * read from, which holds every item and tombstone as objects: a thread that measures a
 * new generation lets the replayed document go before it builds one.
 */
export type LiveState = Record<string, MapState | TextState>

export function liveState(
  kind: DocKind,
  doc: Y.Doc,
  drop?: (root: string, key: string, field: string) => boolean,
): LiveState {
  const out: LiveState = {}
  for (const [name, type] of Object.entries(ROOTS[kind])) {
    if (type === 'text') {
      out[name] = new TextState(doc.getText(name).toString())
      continue
    }
    const entries: [string, unknown][] = []
    doc.getMap(name).forEach((value, key) => {
      if (name === 'meta' && key === 'generation') return
      if (value instanceof Y.Map && drop) {
        const fields: [string, unknown][] = []
        value.forEach((v, field) => {
          if (!drop(name, key, field)) fields.push([field, plain(v)])
        })
        entries.push([key, new MapState(fields)])
      } else entries.push([key, plain(value)])
    })
    out[name] = new MapState(entries)
  }
  return out
}

/** A value held in a Y type as plain values (Y types marked by kind, plain JSON as is). */
function plain(value: unknown): unknown {
  if (value instanceof Y.Map) {
    const entries: [string, unknown][] = []
    value.forEach((v, k) => {
      entries.push([k, plain(v)])
    })
    return new MapState(entries)
  }
  if (value instanceof Y.Text) return new TextState(value.toString())
  if (value instanceof Y.Array) return new ArrayState(value.toArray().map(plain))
  return value
}

/** A value of a live state as a fresh Y type (or plain JSON as is). */
function typed(value: unknown): unknown {
  if (value instanceof MapState) {
    const m = new Y.Map<unknown>()
    for (const [k, v] of value.entries) m.set(k, typed(v))
    return m
  }
  if (value instanceof TextState) return new Y.Text(value.text)
  if (value instanceof ArrayState) {
    const a = new Y.Array<unknown>()
    a.push(value.items.map(typed))
    return a
  }
  return value
}

/**
 * A snapshot whose bytes are under this many times its live items' is clearly not
 * dominated by tombstones (twice what it would weigh re-based, server/live/compaction.ts): its next
 * generation is not built to be measured. The live items' bytes are within a few percent
 * of a next generation's (test/live/rebase-measure.test.ts), far inside this margin.
 */
export const CLEARLY_LIVE = 1.5

/**
 * What a document's items not deleted take encoded (Yjs's update format, version 1): what its
 * next generation would weigh, within a few percent, without building one.
 */
export function liveItemBytes(doc: Y.Doc): number {
  let bytes = 0
  let encoder = new Y.UpdateEncoderV1()
  let written = 0
  for (const structs of doc.store.clients.values()) {
    for (const struct of structs) {
      if (!(struct instanceof Y.Item) || struct.deleted) continue
      struct.write(encoder, 0)
      // Counted in pieces, so no buffer the document's size is kept.
      if (++written % 4096 === 0) {
        bytes += encoder.toUint8Array().length
        encoder = new Y.UpdateEncoderV1()
      }
    }
  }
  return bytes + encoder.toUint8Array().length
}

/** A new generation holding `state` (liveState) and nothing of any history, numbered `generation`. */
export function rebuiltFrom(kind: DocKind, state: LiveState, generation: number): Y.Doc {
  const next = new Y.Doc()
  next.transact(() => {
    for (const [name, type] of Object.entries(ROOTS[kind])) {
      const root = state[name]
      if (type === 'text') {
        if (root instanceof TextState && root.text) next.getText(name).insert(0, root.text)
        continue
      }
      const target = next.getMap(name)
      if (root instanceof MapState) for (const [k, v] of root.entries) target.set(k, typed(v))
    }
    next.getMap('meta').set('generation', generation)
  })
  return next
}

/**
 * A new generation of `doc`: its current state, copied type by type (a Y.Map stays a
 * Y.Map, a Y.Text a Y.Text), with none of its history, numbered `generation`. `drop`
 * leaves out an entry's field (the upgrade to version 3 leaves board cards' descriptions
 * behind).
 */
export function rebuilt(
  kind: DocKind,
  doc: Y.Doc,
  generation: number,
  drop?: (root: string, key: string, field: string) => boolean,
): Y.Doc {
  return rebuiltFrom(kind, liveState(kind, doc, drop), generation)
}

/** One edit carried across a re-base, by key. */
export type CarriedEdit =
  /** A root text changed (a card's description): the base's text and the replica's. */
  | { kind: 'text'; doc: string; root: string; from: string; to: string }
  /** An entry the replica created (a card, a comment, a node): all of it. */
  | { kind: 'entry'; doc: string; root: string; key: string; value: Record<string, unknown> }
  /** An entry's field the replica changed. */
  | {
      kind: 'field'
      doc: string
      root: string
      key: string
      field: string
      from: unknown
      to: unknown
    }
  /** An entry the replica removed (only where people may remove: a map's nodes and edges). */
  | { kind: 'removed'; doc: string; root: string; key: string }

/** Roots whose entries people may remove; elsewhere a removal was never theirs to make. */
const REMOVABLE: Partial<Record<DocKind, readonly string[]>> = { map: ['nodes', 'edges'] }
/** Roots only the server writes: nothing of a replica's is carried there. */
const SERVER_ONLY: Partial<Record<DocKind, readonly string[]>> = {
  board: ['meta', 'claims'],
  card: ['meta', 'attachments'],
}

/** A state vector: per Yjs client, how many of its items a replica holds. */
export type StateVector = Map<number, number>

/**
 * What a replica changed that the old generation's final state does not hold: its edits
 * the server never acknowledged, or acknowledged only in memory before the re-base. `base`
 * is that final state as JSON and `final` its state vector: an item of the replica's whose
 * id the server's state vector does not cover is the replica's own unsent edit, so a value
 * the replica merely missed (the server changed it later) is never taken for an edit.
 * A board card's description a version-2 replica edited goes to the card's document
 * (version 3 keeps it there).
 */
export function editsToCarry(
  name: string,
  base: DocJson,
  final: StateVector,
  local: Y.Doc,
  options: {
    /**
     * The server's own copy, which may change every root and remove anything (a card
     * archived leaves the board): nothing is left out.
     */
    everything?: boolean
  } = {},
): CarriedEdit[] {
  const ref = parseDocName(name)
  if (!ref) return []
  const everything = options.everything === true
  const removable = (root: string) => everything || (REMOVABLE[ref.kind]?.includes(root) ?? false)
  const known = (item: Y.Item | null | undefined): boolean =>
    !!item && item.id.clock < (final.get(item.id.client) ?? 0)
  const localSv = Y.decodeStateVector(Y.encodeStateVector(local))
  // The replica missed something the server had: a text that differs may be stale.
  const stale = [...final].some(([client, clock]) => (localSv.get(client) ?? 0) < clock)
  const out: CarriedEdit[] = []

  const textEdit = (doc: string, root: string, text: Y.Text | string, baseText: unknown) => {
    const to = text.toString()
    const b = typeof baseText === 'string' ? baseText : ''
    if (to === b) return
    // The replica's text without its own unsent insertions: what it last had from the server.
    let had = ''
    if (text instanceof Y.Text) {
      for (let item = text._start; item; item = item.right) {
        if (!item.deleted && known(item) && item.content instanceof Y.ContentString)
          had += item.content.str
      }
    }
    const from = stale && text instanceof Y.Text && had !== b ? had : b
    if (from !== to) out.push({ kind: 'text', doc, root, from, to })
  }
  const cardOf = (taskId: string) => name.replace(/\/board$/, `/tasks/${taskId}`)

  for (const [root, type] of Object.entries(ROOTS[ref.kind])) {
    if (!everything && SERVER_ONLY[ref.kind]?.includes(root)) continue
    if (type === 'text') {
      textEdit(name, root, local.getText(root), base[root])
      continue
    }
    const map = local.getMap<unknown>(root)
    const was = asRecord(base[root])
    for (const [key, item] of map._map) {
      if (root === 'meta' && key === 'generation') continue
      const before = was[key]
      if (item.deleted) {
        // Removed here, while the server still had it: the replica's own removal.
        if (before !== undefined && known(item) && removable(root))
          out.push({ kind: 'removed', doc: name, root, key })
        continue
      }
      const value = map.get(key)
      if (!(value instanceof Y.Map)) {
        if (!known(item))
          out.push({ kind: 'field', doc: name, root, key: '', field: key, from: before, to: value })
        continue
      }
      const boardCard = ref.kind === 'board' && root === 'tasks' && !everything
      if (!known(item)) {
        // Created here and never sent: all of it.
        const fields = value.toJSON() as Record<string, unknown>
        const description = value.get('description')
        if (boardCard) {
          delete fields.description
          if (description instanceof Y.Text) textEdit(cardOf(key), 'description', description, '')
        }
        out.push({ kind: 'entry', doc: name, root, key, value: fields })
        continue
      }
      const fieldsBefore = asRecord(before)
      for (const [field, fieldItem] of value._map) {
        const v = value.get(field)
        if (boardCard && field === 'description') {
          // Version 2 kept it here; it goes to the card's document.
          if (v instanceof Y.Text) textEdit(cardOf(key), 'description', v, fieldsBefore.description)
          else if (!known(fieldItem) && typeof v === 'string')
            textEdit(cardOf(key), 'description', v, fieldsBefore.description)
          continue
        }
        if (fieldItem.deleted) {
          // Removed here while the server still had it (unless this replica missed things).
          if ((everything || !stale) && field in fieldsBefore)
            out.push({
              kind: 'field',
              doc: name,
              root,
              key,
              field,
              from: fieldsBefore[field],
              to: undefined,
            })
          continue
        }
        if (known(fieldItem) || v instanceof Y.AbstractType) continue
        out.push({ kind: 'field', doc: name, root, key, field, from: fieldsBefore[field], to: v })
      }
    }
  }
  return out
}

/**
 * Makes carried edits again on the new generation, as fresh edits of `origin` (so they
 * are sent, and reviewed by the server's guards like any edit). Each applies only where
 * the new generation still holds what the edit was made on: a field someone else changed
 * since keeps the replica's value (the last edit wins, as live); an entry that left (a
 * card archived, a node removed) is not brought back. Text merges: the replica's change
 * is made on the part of the text it changed, when the rest still reads the same.
 */
export function carry(doc: Y.Doc, edits: readonly CarriedEdit[], origin?: unknown): number {
  let made = 0
  doc.transact(() => {
    for (const e of edits) {
      if (e.kind === 'text') {
        const text = doc.getText(e.root)
        const merged = mergeText(e.from, e.to, text.toString())
        if (merged !== text.toString()) {
          replaceText(text, merged)
          made++
        }
        continue
      }
      const root = doc.getMap<unknown>(e.root)
      if (e.kind === 'entry') {
        if (root.has(e.key)) continue
        const entry = new Y.Map<unknown>()
        for (const [k, v] of Object.entries(e.value)) entry.set(k, v)
        root.set(e.key, entry)
        made++
      } else if (e.kind === 'removed') {
        if (root.has(e.key)) {
          root.delete(e.key)
          made++
        }
      } else if (e.key === '') {
        if (!same(root.get(e.field), e.to)) {
          if (e.to === undefined) root.delete(e.field)
          else root.set(e.field, e.to)
          made++
        }
      } else {
        const entry = root.get(e.key)
        if (!(entry instanceof Y.Map) || same(entry.get(e.field), e.to)) continue
        if (e.to === undefined) entry.delete(e.field)
        else entry.set(e.field, e.to)
        made++
      }
    }
  }, origin)
  return made
}

/**
 * A three-way merge of one text: `to` is `from` with one span changed (what the replica
 * did, its common prefix and suffix kept); that change is made on `now` where the span's
 * surroundings are found (a few characters either side, as a patch tool finds its
 * context), so what someone else changed elsewhere in the text stays. When the
 * surroundings are gone (both changed the same words), the replica's text wins.
 */
export function mergeText(from: string, to: string, now: string): string {
  if (from === to) return now
  if (now === from) return to
  let start = 0
  const max = Math.min(from.length, to.length)
  while (start < max && from[start] === to[start]) start++
  let end = 0
  while (end < max - start && from[from.length - 1 - end] === to[to.length - 1 - end]) end++
  const removed = from.slice(start, from.length - end)
  const inserted = to.slice(start, to.length - end)
  // The span's place in `now`: its surroundings and what it removed, near where it was;
  // with less and less context while none is found.
  for (const size of [CONTEXT, 8, 4, 2, 1]) {
    const before = from.slice(Math.max(0, start - size), start)
    const after = from.slice(from.length - end, from.length - end + size)
    const tries: [string, number][] = [
      [before + removed + after, before.length],
      [before + removed, before.length],
      [removed + after, 0],
    ]
    if (removed === '') tries.push([before, before.length], [after, 0])
    for (const [needle, offset] of tries) {
      if (needle === '') continue
      const at = nearest(now, needle, start - offset)
      if (at < 0) continue
      const span = at + offset
      return now.slice(0, span) + inserted + now.slice(span + removed.length)
    }
  }
  return from === '' ? inserted + now : to
}

/** How much text either side of a changed span locates it in a text changed since. */
const CONTEXT = 16

/** The occurrence of `needle` in `text` nearest to `around`, or -1. */
function nearest(text: string, needle: string, around: number): number {
  let best = -1
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) {
    if (best < 0 || Math.abs(at - around) < Math.abs(best - around)) best = at
  }
  return best
}

function asRecord(v: unknown): Record<string, unknown> {
  return isRecord(v) ? v : {}
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (a === undefined || b === undefined) return false
  return JSON.stringify(a) === JSON.stringify(b)
}

/** A base with edits made on it (what the state the edits were made on became). */
export function applyToJson(base: DocJson, edits: readonly CarriedEdit[]): DocJson {
  const out: DocJson = structuredClone(base)
  for (const e of edits) {
    if (e.kind === 'text') {
      out[e.root] = mergeText(
        e.from,
        e.to,
        typeof out[e.root] === 'string' ? (out[e.root] as string) : '',
      )
      continue
    }
    const root = asRecord(out[e.root])
    out[e.root] = root
    if (e.kind === 'entry') root[e.key] = structuredClone(e.value)
    else if (e.kind === 'removed') delete root[e.key]
    else {
      const target = e.key === '' ? root : asRecord(root[e.key])
      if (e.key !== '') {
        if (!(e.key in root)) continue
        root[e.key] = target
      }
      if (e.to === undefined) delete target[e.field]
      else target[e.field] = structuredClone(e.to)
    }
  }
  return out
}
