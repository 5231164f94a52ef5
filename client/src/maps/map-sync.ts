import {
  applyEdgeChanges,
  applyNodeChanges,
  type Edge,
  type EdgeChange,
  type NodeChange,
} from '@xyflow/react'
import { useCallback, useEffect, useMemo, useRef, useState } from 'react'
import { mapDocMaps, readEdge, readMapTitle, readNode } from '../../../shared/map-doc.ts'
import type { LiveDoc } from '../live/live-doc.ts'
import type { Peer } from '../live/use-live.ts'
import { deleteEdges, deleteNodes, moveNodes, NODE_COLORS } from './map-actions.ts'
import type { ThoughtNode } from './thought.tsx'

/** Others' node drags in progress, from their awareness state (wire data: checked). */
function positionsOf(v: unknown): { id: string; x: number; y: number }[] {
  if (!Array.isArray(v)) return []
  return v.filter(
    (p): p is { id: string; x: number; y: number } =>
      typeof p === 'object' &&
      p !== null &&
      typeof p.id === 'string' &&
      Number.isFinite(p.x) &&
      Number.isFinite(p.y),
  )
}

/**
 * The canvas's nodes and edges, kept in step with the map's live document both ways: the
 * document's changes (anyone's) rebuild them, reusing unchanged nodes so the canvas
 * re-renders only what moved; others' drags in progress (awareness) move the nodes they
 * hold; a finished drag, a removal or a deleted edge is written to the document once.
 */
export function useMapSync(live: LiveDoc, peers: readonly Peer[]) {
  const [nodes, setNodes] = useState<ThoughtNode[]>([])
  const [edges, setEdges] = useState<Edge[]>([])
  const [title, setTitle] = useState(() => readMapTitle(live.doc))

  // Where others are dragging nodes right now (awareness), shown before they drop them.
  const peerDrags = useMemo(() => {
    const out = new Map<string, { x: number; y: number }>()
    for (const p of peers) for (const d of positionsOf(p.state.nodeDrag)) out.set(d.id, d)
    return out
  }, [peers])
  const peerDragsRef = useRef(peerDrags)
  peerDragsRef.current = peerDrags

  const rebuild = useCallback(() => {
    const maps = mapDocMaps(live.doc)
    setNodes((prev) => {
      const before = new Map(prev.map((n) => [n.id, n]))
      const next: ThoughtNode[] = []
      maps.nodes.forEach((m, id) => {
        const s = readNode(id, m)
        const old = before.get(id)
        const peer = peerDragsRef.current.get(id)
        const position = old?.dragging ? old.position : (peer ?? { x: s.x, y: s.y })
        const color = s.color ?? NODE_COLORS[0]
        if (
          old &&
          old.position.x === position.x &&
          old.position.y === position.y &&
          old.data.text === s.text &&
          old.data.color === color &&
          old.data.imageUrl === s.imageUrl
        ) {
          next.push(old)
          return
        }
        next.push({
          ...(old ?? {}),
          id,
          type: 'thought',
          position,
          data: { text: s.text, color, imageUrl: s.imageUrl },
        })
      })
      return next
    })
    setEdges((prev) => {
      const selected = new Set(prev.filter((e) => e.selected).map((e) => e.id))
      const next: Edge[] = []
      maps.edges.forEach((m, id) => {
        const e = readEdge(id, m)
        next.push({ id, source: e.sourceId, target: e.targetId, selected: selected.has(id) })
      })
      return next
    })
    setTitle(readMapTitle(live.doc))
  }, [live])

  useEffect(() => {
    const maps = mapDocMaps(live.doc)
    rebuild()
    maps.nodes.observeDeep(rebuild)
    maps.edges.observeDeep(rebuild)
    maps.meta.observe(rebuild)
    return () => {
      maps.nodes.unobserveDeep(rebuild)
      maps.edges.unobserveDeep(rebuild)
      maps.meta.unobserve(rebuild)
    }
  }, [live, rebuild])

  // Others' drags in progress move the nodes they hold.
  useEffect(() => {
    void peerDrags
    rebuild()
  }, [peerDrags, rebuild])

  const onNodesChange = useCallback(
    (changes: NodeChange<ThoughtNode>[]) => {
      setNodes((nds) => applyNodeChanges(changes, nds))
      // A drag that ended, or a move by the arrow keys: the one write of a new position.
      const moved = changes.flatMap((c) =>
        c.type === 'position' && c.position && !c.dragging
          ? [{ id: c.id, x: c.position.x, y: c.position.y }]
          : [],
      )
      if (moved.length > 0) {
        moveNodes(live.doc, moved)
        live.awareness.setLocalStateField('nodeDrag', null)
      }
      const removed = changes.flatMap((c) => (c.type === 'remove' ? [c.id] : []))
      if (removed.length > 0) deleteNodes(live.doc, removed)
    },
    [live],
  )

  const onEdgesChange = useCallback(
    (changes: EdgeChange[]) => {
      setEdges((eds) => applyEdgeChanges(changes, eds))
      const removed = changes.flatMap((c) => (c.type === 'remove' ? [c.id] : []))
      if (removed.length > 0) deleteEdges(live.doc, removed)
    },
    [live],
  )

  const dragFrame = useRef(0)
  const onNodeDrag = useCallback(
    (_e: unknown, _node: ThoughtNode, dragged: ThoughtNode[]) => {
      if (dragFrame.current) return
      dragFrame.current = requestAnimationFrame(() => {
        dragFrame.current = 0
        live.awareness.setLocalStateField(
          'nodeDrag',
          dragged.map((n) => ({ id: n.id, x: n.position.x, y: n.position.y })),
        )
      })
    },
    [live],
  )

  return { nodes, edges, title, onNodesChange, onEdgesChange, onNodeDrag }
}
