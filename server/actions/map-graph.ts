import type { StoredNode } from '../../shared/map-doc.ts'

/**
 * A map read as a graph, for export_map and layout_map: which nodes are roots, each node's
 * children, whether the map is a forest of trees, and how big each node draws. A map is a
 * free graph (people draw any edge), so the trees here are a spanning forest: every node
 * appears exactly once, a cycle is broken where it is first met, and nodes no root reaches
 * start trees of their own.
 */

export interface EdgeEnds {
  sourceId: string
  targetId: string
}

export interface SpanningForest {
  /** Tree roots in reading order: `first` (when given), in-degree-0 nodes, then leftovers. */
  roots: string[]
  /** Each node's children in the spanning forest, in reading order. */
  children: Map<string, string[]>
  /**
   * The map itself is a forest: no node has two incoming edges (duplicates and self-edges
   * count) and every node is reached from a node nothing points to, so no cycles.
   */
  isForest: boolean
}

/** Reading order: top to bottom, then left to right (ids break ties, so it is stable). */
export function readingOrder(a: StoredNode, b: StoredNode): number {
  return a.y - b.y || a.x - b.x || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
}

/** Edges whose two ends are nodes of the map (an edge left dangling by a canvas is ignored). */
export function liveEdges<E extends EdgeEnds>(
  nodes: readonly StoredNode[],
  edges: readonly E[],
): E[] {
  const ids = new Set(nodes.map((n) => n.id))
  return edges.filter((e) => ids.has(e.sourceId) && ids.has(e.targetId))
}

/**
 * The spanning forest, grown breadth-first (a node with two parents goes under the nearer
 * root). `first` roots the first tree even when something points to it.
 */
export function spanningForest(
  nodes: readonly StoredNode[],
  edges: readonly EdgeEnds[],
  first?: string,
): SpanningForest {
  const ordered = [...nodes].sort(readingOrder)
  const rank = new Map(ordered.map((n, i) => [n.id, i]))
  const out = new Map<string, Set<string>>(ordered.map((n) => [n.id, new Set()]))
  const inDegree = new Map<string, number>(ordered.map((n) => [n.id, 0]))
  for (const e of liveEdges(nodes, edges)) {
    out.get(e.sourceId)?.add(e.targetId)
    inDegree.set(e.targetId, (inDegree.get(e.targetId) ?? 0) + 1)
  }
  const targets = (id: string) =>
    [...(out.get(id) ?? [])].sort((a, b) => (rank.get(a) ?? 0) - (rank.get(b) ?? 0))

  const children = new Map<string, string[]>(ordered.map((n) => [n.id, []]))
  const placed = new Set<string>()
  const roots: string[] = []
  const grow = (root: string) => {
    roots.push(root)
    placed.add(root)
    const queue = [root]
    for (let i = 0; i < queue.length; i++) {
      const id = queue[i] as string
      for (const t of targets(id)) {
        if (placed.has(t)) continue
        placed.add(t)
        children.get(id)?.push(t)
        queue.push(t)
      }
    }
  }
  if (first !== undefined && rank.has(first)) grow(first)
  for (const n of ordered) if (!placed.has(n.id) && inDegree.get(n.id) === 0) grow(n.id)
  const reachedFromRoots = placed.size === ordered.length
  for (const n of ordered) if (!placed.has(n.id)) grow(n.id)

  const isForest = reachedFromRoots && [...inDegree.values()].every((d) => d <= 1)
  return { roots, children, isForest }
}

/** How a node draws: the canvas's `.thought` box (150–280 px wide), estimated from its text. */
export interface NodeBox {
  width: number
  height: number
  /** The text as drawn, wrapped to the box. */
  lines: string[]
}

export const BOX = {
  minWidth: 150,
  maxWidth: 280,
  /** Padding and borders around the text, across and down. */
  padX: 26,
  padY: 23,
  lineHeight: 20,
  /** Average advance of a 14 px sans-serif character. */
  charWidth: 7.5,
  image: 186,
} as const

/** Wraps a line at word boundaries (a word longer than a line is cut) to `max` characters. */
function wrap(line: string, max: number): string[] {
  if (line.length <= max) return [line]
  const lines: string[] = []
  let current = ''
  for (const word of line.split(' ')) {
    let w = word
    while (w.length > max) {
      if (current) lines.push(current)
      current = ''
      lines.push(w.slice(0, max))
      w = w.slice(max)
    }
    const next = current ? `${current} ${w}` : w
    if (next.length > max) {
      lines.push(current)
      current = w
    } else current = next
  }
  lines.push(current)
  return lines
}

export function nodeBox(node: StoredNode): NodeBox {
  const perLine = Math.floor((BOX.maxWidth - BOX.padX) / BOX.charWidth)
  const lines = node.text.split(/\r\n|\r|\n/).flatMap((l) => wrap(l, perLine))
  const longest = Math.max(0, ...lines.map((l) => l.length))
  const width = Math.min(
    BOX.maxWidth,
    Math.max(BOX.minWidth, Math.ceil(BOX.padX + longest * BOX.charWidth)),
  )
  const height =
    BOX.padY + Math.max(1, lines.length) * BOX.lineHeight + (node.imageUrl ? BOX.image : 0)
  return { width, height, lines }
}
