import * as Y from 'yjs'
import { LIMITS } from '../../../shared/constants.ts'
import { mapDocMaps } from '../../../shared/map-doc.ts'
import { LOCAL } from '../board/board-actions.ts'
import { uuid } from '../ids.ts'

/**
 * A person's edits to a map document (docs/design.md Contract 3): plain Yjs edits. Positions are
 * written once, when a drag ends; the drag in progress travels through awareness only.
 */

export const NODE_COLORS = [
  '#6366f1',
  '#0ea5e9',
  '#10b981',
  '#f59e0b',
  '#ef4444',
  '#ec4899',
  '#8b5cf6',
  '#64748b',
] as const

const round = (n: number) => Math.round(n * 10) / 10

export function addNode(
  doc: Y.Doc,
  input: { x: number; y: number; text?: string; color?: string },
) {
  const id = uuid()
  doc.transact(() => {
    const m = new Y.Map<unknown>()
    m.set('text', (input.text ?? '').slice(0, LIMITS.nodeText.max))
    m.set('x', round(input.x))
    m.set('y', round(input.y))
    m.set('color', input.color ?? NODE_COLORS[0])
    mapDocMaps(doc).nodes.set(id, m)
  }, LOCAL)
  return id
}

export function moveNodes(doc: Y.Doc, moves: readonly { id: string; x: number; y: number }[]) {
  const { nodes } = mapDocMaps(doc)
  doc.transact(() => {
    for (const { id, x, y } of moves) {
      const m = nodes.get(id)
      if (!m) continue
      if (m.get('x') !== round(x)) m.set('x', round(x))
      if (m.get('y') !== round(y)) m.set('y', round(y))
    }
  }, LOCAL)
}

export function setNodeText(doc: Y.Doc, id: string, text: string) {
  const m = mapDocMaps(doc).nodes.get(id)
  if (!m || m.get('text') === text) return
  doc.transact(() => m.set('text', text.slice(0, LIMITS.nodeText.max)), LOCAL)
}

export function setNodeColor(doc: Y.Doc, id: string, color: string) {
  const m = mapDocMaps(doc).nodes.get(id)
  if (!m || m.get('color') === color) return
  doc.transact(() => m.set('color', color), LOCAL)
}

/** Deleting a node takes the edges touching it along, in the same transaction. */
export function deleteNodes(doc: Y.Doc, ids: readonly string[]) {
  const { nodes, edges } = mapDocMaps(doc)
  const gone = new Set(ids)
  doc.transact(() => {
    edges.forEach((m, id) => {
      if (gone.has(m.get('sourceId') as string) || gone.has(m.get('targetId') as string)) {
        edges.delete(id)
      }
    })
    for (const id of ids) nodes.delete(id)
  }, LOCAL)
}

/** Connects two different nodes; a second edge between the same pair is not added. */
export function addEdge(doc: Y.Doc, sourceId: string, targetId: string): string | undefined {
  if (sourceId === targetId) return undefined
  const { nodes, edges } = mapDocMaps(doc)
  if (!nodes.has(sourceId) || !nodes.has(targetId)) return undefined
  let exists = false
  edges.forEach((m) => {
    if (m.get('sourceId') === sourceId && m.get('targetId') === targetId) exists = true
  })
  if (exists) return undefined
  const id = uuid()
  doc.transact(() => {
    const m = new Y.Map<unknown>()
    m.set('sourceId', sourceId)
    m.set('targetId', targetId)
    edges.set(id, m)
  }, LOCAL)
  return id
}

export function deleteEdges(doc: Y.Doc, ids: readonly string[]) {
  const { edges } = mapDocMaps(doc)
  doc.transact(() => {
    for (const id of ids) edges.delete(id)
  }, LOCAL)
}
