import type * as Y from 'yjs'
import { HEX_COLOR, LIMITS } from '../../shared/constants.ts'
import { isUuid } from '../../shared/ids.ts'
import { mapDocMaps } from '../../shared/map-doc.ts'
import { GUARD_ORIGIN } from '../live/origins.ts'
import {
  GENERATION_IS_THE_SERVERS,
  type Json,
  rebuild,
  snapshot,
  touchedEntities,
} from './guard-kit.ts'

/**
 * The map document's counterpart of BoardGuard: people draw on the canvas freely (nodes
 * and edges may be added, moved, edited and deleted), but within the limits agents obey —
 * node text ≤4,000, `#` hex colours, finite coordinates, edges between two different
 * existing nodes of this map, a title of 1–200 — and never into `imageUrl`, which only
 * set_node_image and clear_node_image write. Deleting a node takes its edges with it.
 */
export interface MapReport {
  /** Something valid changed: the map moves to the top of list_maps. */
  touched: boolean
  /** Nodes and edges people created, for the id → map index agents look them up by. */
  created: { id: string; kind: 'node' | 'edge' }[]
  reverts: { reason: string }[]
}

const finite = (v: unknown) => typeof v === 'number' && Number.isFinite(v)

function nodeFieldError(key: string, v: unknown): string | undefined {
  switch (key) {
    case 'text':
      return typeof v === 'string' && v.length <= LIMITS.nodeText.max
        ? undefined
        : `node text is at most ${LIMITS.nodeText.max} characters`
    case 'x':
    case 'y':
      return finite(v) ? undefined : `${key} must be a finite number`
    case 'color':
      return v === null || (typeof v === 'string' && HEX_COLOR.test(v))
        ? undefined
        : 'color must be a # hex colour'
    default:
      return `nodes have no field ${key}`
  }
}

export class MapGuard {
  private readonly doc: Y.Doc
  private readonly maps: ReturnType<typeof mapDocMaps>
  private readonly roots: Map<object, string>
  private readonly last = new Map<string, Map<string, Json>>()

  constructor(doc: Y.Doc) {
    this.doc = doc
    this.maps = mapDocMaps(doc)
    this.roots = new Map<object, string>([
      [this.maps.meta, 'meta'],
      [this.maps.nodes, 'nodes'],
      [this.maps.edges, 'edges'],
    ])
    const meta = new Map<string, Json>()
    this.maps.meta.forEach((v, k) => {
      meta.set(k, { value: v })
    })
    this.last.set('meta', meta)
    for (const root of ['nodes', 'edges'] as const) {
      const entries = new Map<string, Json>()
      this.maps[root].forEach((m, id) => {
        entries.set(id, snapshot(m))
      })
      this.last.set(root, entries)
    }
  }

  private touchedKeys(tr: Y.Transaction): [string, string][] {
    return touchedEntities(tr, this.roots)
  }

  remember(tr: Y.Transaction): void {
    for (const [root, key] of this.touchedKeys(tr)) this.rememberOne(root, key)
  }

  private rememberOne(root: string, key: string): void {
    const entries = this.last.get(root) as Map<string, Json>
    if (root === 'meta') {
      const v = this.maps.meta.get(key)
      if (v === undefined) entries.delete(key)
      else entries.set(key, { value: v })
      return
    }
    const m = this.maps[root as 'nodes' | 'edges'].get(key)
    if (m) entries.set(key, snapshot(m))
    else entries.delete(key)
  }

  review(tr: Y.Transaction): MapReport {
    const report: MapReport = { touched: false, created: [], reverts: [] }
    const touched = this.touchedKeys(tr)
    if (touched.length === 0) return report
    this.doc.transact(() => {
      for (const [root, key] of touched) {
        if (root === 'meta') this.reviewMeta(key, report)
        else if (root === 'nodes') this.reviewNode(key, report)
        else this.reviewEdge(key, report)
      }
      // A deleted node takes the edges touching it (as delete_node does).
      const nodes = this.maps.nodes
      for (const [id, edge] of [...this.maps.edges.entries()]) {
        if (!nodes.has(String(edge.get('sourceId'))) || !nodes.has(String(edge.get('targetId')))) {
          this.maps.edges.delete(id)
        }
      }
    }, GUARD_ORIGIN)
    for (const [root, key] of touched) this.rememberOne(root, key)
    for (const id of [...(this.last.get('edges')?.keys() ?? [])])
      if (!this.maps.edges.has(id)) this.last.get('edges')?.delete(id)
    return report
  }

  private reviewMeta(key: string, report: MapReport): void {
    const saved = this.last.get('meta')?.get(key)
    const value = this.maps.meta.get(key)
    const ok =
      key === 'title' &&
      typeof value === 'string' &&
      value.length >= LIMITS.mapTitle.min &&
      value.length <= LIMITS.mapTitle.max
    if (ok) {
      report.touched = true
      return
    }
    if (saved) this.maps.meta.set(key, saved.value)
    else this.maps.meta.delete(key)
    report.reverts.push({
      reason:
        key === 'title'
          ? `the map title must be 1–${LIMITS.mapTitle.max} characters`
          : GENERATION_IS_THE_SERVERS,
    })
  }

  private reviewNode(id: string, report: MapReport): void {
    const m = this.maps.nodes.get(id)
    const saved = this.last.get('nodes')?.get(id)
    if (!m) {
      report.touched = true
      return
    }
    const current = snapshot(m)
    let problem: string | undefined
    if (!saved && !isUuid(id)) problem = 'node ids must be UUIDs'
    for (const [k, v] of Object.entries(current)) {
      if (problem) break
      if (saved && JSON.stringify(saved[k]) === JSON.stringify(v)) continue
      problem =
        k === 'imageUrl'
          ? v === null && !saved
            ? undefined
            : 'node images are set with set_node_image only'
          : nodeFieldError(k, v)
    }
    if (!problem && saved)
      problem = Object.keys(saved).find((k) => !(k in current)) && 'node fields cannot be removed'
    if (problem) {
      if (saved) {
        for (const k of [...m.keys()]) if (!(k in saved)) m.delete(k)
        for (const [k, v] of Object.entries(saved))
          if (JSON.stringify(m.get(k)) !== JSON.stringify(v)) m.set(k, v)
      } else {
        this.maps.nodes.delete(id)
      }
      report.reverts.push({ reason: problem })
      return
    }
    if (!saved) {
      for (const [k, v] of [
        ['text', ''],
        ['x', 0],
        ['y', 0],
        ['color', null],
        ['imageUrl', null],
      ] as const) {
        if (!m.has(k)) m.set(k, v)
      }
      report.created.push({ id, kind: 'node' })
    }
    report.touched = true
  }

  private reviewEdge(id: string, report: MapReport): void {
    const m = this.maps.edges.get(id)
    const saved = this.last.get('edges')?.get(id)
    if (!m) {
      report.touched = true
      return
    }
    const { sourceId, targetId } = snapshot(m)
    const extra = [...m.keys()].some((k) => k !== 'sourceId' && k !== 'targetId')
    const problem = !isUuid(id)
      ? 'edge ids must be UUIDs'
      : extra
        ? 'edges have only sourceId and targetId'
        : sourceId === targetId
          ? 'a node cannot connect to itself'
          : !this.maps.nodes.has(String(sourceId)) || !this.maps.nodes.has(String(targetId))
            ? 'an edge connects two existing nodes of this map'
            : undefined
    if (problem) {
      if (saved) this.maps.edges.set(id, rebuild(saved))
      else this.maps.edges.delete(id)
      report.reverts.push({ reason: problem })
      return
    }
    if (!saved) report.created.push({ id, kind: 'edge' })
    report.touched = true
  }
}
