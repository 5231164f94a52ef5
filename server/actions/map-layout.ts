import { hierarchy, tree } from 'd3-hierarchy'
import type * as Y from 'yjs'
import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { mapDocMaps, readEdge, readNode, type StoredNode } from '../../shared/map-doc.ts'
import { notFound } from '../errors.ts'
import type { ActionContext } from './context.ts'
import { type EdgeEnds, nodeBox, spanningForest } from './map-graph.ts'
import { writeMap } from './maps.ts'

/**
 * layout_map: a tidy tree (Reingold–Tilford, d3-hierarchy's `tree`) of the map's spanning
 * forest. Siblings sit about 220 px apart across and 90 px down, as the specification
 * advises; a node too big for that gets the room its box needs, so no two boxes overlap.
 */

export type Direction = 'right' | 'down'

/** The specification's advice: levels 220 px apart across, siblings 90 px down. */
export const LEVEL_ACROSS = 220
export const SIBLING_DOWN = 90
/** Room kept between two boxes when their size needs more than the advised spacing. */
const GAP = { across: 40, down: 16 }

export interface Position {
  x: number
  y: number
}

/**
 * Where every node goes. The trees stand side by side (as children of one invisible root,
 * so the tidy algorithm keeps them apart), and the whole drawing is moved so that the first
 * tree's root stays where it was.
 */
export function tidyLayout(
  nodes: readonly StoredNode[],
  edges: readonly EdgeEnds[],
  options: { rootNodeId?: string | undefined; direction: Direction },
): Map<string, Position> {
  const placed = new Map<string, Position>()
  if (nodes.length === 0) return placed
  const byId = new Map(nodes.map((n) => [n.id, n]))
  const boxes = new Map(nodes.map((n) => [n.id, nodeBox(n)]))
  const forest = spanningForest(nodes, edges, options.rootNodeId)
  const right = options.direction === 'right'
  // Along the breadth axis (down for `right`, across for `down`): a box's extent, and the
  // advised centre-to-centre spacing of siblings.
  const breadth = (id: string) => {
    const box = boxes.get(id)
    return box ? (right ? box.height : box.width) : 0
  }
  const advised = right ? SIBLING_DOWN : LEVEL_ACROSS
  const gap = right ? GAP.down : GAP.across

  const VIRTUAL = ''
  const root = hierarchy(VIRTUAL, (id) =>
    id === VIRTUAL ? forest.roots : (forest.children.get(id) ?? []),
  )
  const laidOut = tree<string>()
    .nodeSize([1, 1])
    .separation((a, b) => Math.max(advised, (breadth(a.data) + breadth(b.data)) / 2 + gap))(root)

  // Depth axis: each level starts where the widest (or tallest) box of the one before
  // ends, never closer than the advised spacing.
  const depthExtent: number[] = []
  for (const n of laidOut.descendants()) {
    if (n.data === VIRTUAL) continue
    const box = boxes.get(n.data)
    const extent = box ? (right ? box.width : box.height) : 0
    depthExtent[n.depth] = Math.max(depthExtent[n.depth] ?? 0, extent)
  }
  const levelStep = right ? LEVEL_ACROSS : SIBLING_DOWN
  const levelAt: number[] = [0, 0]
  for (let d = 2; d < depthExtent.length; d++) {
    const before = depthExtent[d - 1] ?? 0
    levelAt[d] =
      (levelAt[d - 1] ?? 0) + Math.max(levelStep, before + (right ? GAP.across : GAP.down))
  }

  for (const n of laidOut.descendants()) {
    if (n.data === VIRTUAL) continue
    const along = n.x - breadth(n.data) / 2
    const level = levelAt[n.depth] ?? 0
    placed.set(n.data, right ? { x: level, y: along } : { x: along, y: level })
  }

  const firstRoot = forest.roots[0] as string
  const anchor = byId.get(firstRoot) as StoredNode
  const at = placed.get(firstRoot) as Position
  const dx = anchor.x - at.x
  const dy = anchor.y - at.y
  for (const [id, p] of placed) placed.set(id, { x: round(p.x + dx), y: round(p.y + dy) })
  return placed
}

const round = (v: number) => Math.round(v * 100) / 100

/**
 * layout_map: every node moved to its place in one write, so everyone watching sees the
 * map rearrange at once. Idempotent: a tidy map stays as it is (nodes already in place are
 * not written). A rootNodeId not on the map is a 404, like any node id that is not there.
 */
export async function layout_map(
  ctx: ActionContext,
  input: ActionInput<'layout_map'>,
): Promise<ActionResults['layout_map']> {
  return writeMap(ctx, input.mapId, async (w) => {
    const maps = mapDocMaps(w.doc)
    const { rootNodeId } = input
    if (rootNodeId !== undefined && !maps.nodes.has(rootNodeId)) {
      throw notFound(`No node with rootNodeId ${rootNodeId} on map ${input.mapId}`)
    }
    const nodes: StoredNode[] = []
    maps.nodes.forEach((m, id) => {
      nodes.push(readNode(id, m))
    })
    const edges: EdgeEnds[] = []
    maps.edges.forEach((m, id) => {
      edges.push(readEdge(id, m))
    })
    const places = tidyLayout(nodes, edges, { rootNodeId, direction: input.direction ?? 'right' })
    const moves: [Y.Map<unknown>, Position][] = []
    for (const [id, p] of places) {
      const m = maps.nodes.get(id)
      if (m && (m.get('x') !== p.x || m.get('y') !== p.y)) moves.push([m, p])
    }
    if (moves.length > 0) {
      w.mutate(() => {
        for (const [m, p] of moves) {
          m.set('x', p.x)
          m.set('y', p.y)
        }
      })
    }
    return { nodes: [...places].map(([id, p]) => ({ id, x: p.x, y: p.y })) }
  })
}
