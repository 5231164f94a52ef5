import type * as Y from 'yjs'
import type { z } from 'zod'
import type * as out from './schemas/outputs.ts'

/**
 * The map document (docs/design.md, Contract 3): one per mind map, named
 * `<orgId>/maps/<mapId>` (see `mapDocName` in board-doc.ts). Programs outside this
 * repository read these names and shapes:
 * - `meta`: Y.Map { title }
 * - `nodes`: Y.Map id → Y.Map { text, x, y, color, imageUrl }
 * - `edges`: Y.Map id → Y.Map { sourceId, targetId }
 */
export interface MapDocMaps {
  meta: Y.Map<unknown>
  nodes: Y.Map<Y.Map<unknown>>
  edges: Y.Map<Y.Map<unknown>>
}

export function mapDocMaps(doc: Y.Doc): MapDocMaps {
  return {
    meta: doc.getMap('meta'),
    nodes: doc.getMap('nodes'),
    edges: doc.getMap('edges'),
  }
}

/** A map as the map list shows it. */
export type MindMap = z.output<typeof out.mindMap>

/**
 * A node as the agent endpoint returns it. `imageUrl` is present once an image is set;
 * `color` is null until one is chosen (the canvas then uses its default accent).
 */
export type MapNode = z.output<typeof out.mapNode>

export type MapEdge = z.output<typeof out.mapEdge>

/** A node's fields as stored, before the image path is made absolute. */
export interface StoredNode {
  id: string
  text: string
  x: number
  y: number
  color: string | null
  /** Root-relative path (`/files/public/...`) or null. */
  imageUrl: string | null
}

function num(m: Y.Map<unknown>, key: string): number {
  const v = m.get(key)
  return typeof v === 'number' && Number.isFinite(v) ? v : 0
}

function strOrNull(m: Y.Map<unknown>, key: string): string | null {
  const v = m.get(key)
  return typeof v === 'string' && v !== '' ? v : null
}

export function readNode(id: string, m: Y.Map<unknown>): StoredNode {
  const text = m.get('text')
  return {
    id,
    text: typeof text === 'string' ? text : '',
    x: num(m, 'x'),
    y: num(m, 'y'),
    color: strOrNull(m, 'color'),
    imageUrl: strOrNull(m, 'imageUrl'),
  }
}

export function readEdge(
  id: string,
  m: Y.Map<unknown>,
): { id: string; sourceId: string; targetId: string } {
  return { id, sourceId: strOrNull(m, 'sourceId') ?? '', targetId: strOrNull(m, 'targetId') ?? '' }
}

export function readMapTitle(doc: Y.Doc): string {
  const t = mapDocMaps(doc).meta.get('title')
  return typeof t === 'string' ? t : ''
}
