import '@xyflow/react/dist/style.css'
import {
  Background,
  ConnectionMode,
  Controls,
  type Edge,
  MiniMap,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
} from '@xyflow/react'
import { useCallback, useEffect, useMemo, useRef, useState } from 'react'
import { mapDocName } from '../../../shared/board-doc.ts'
import { LIMITS } from '../../../shared/constants.ts'
import { appApi } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import type { LiveDoc } from '../live/live-doc.ts'
import { useDocStatus, usePeers } from '../live/use-live.ts'
import { Link } from '../router.tsx'
import { Avatar } from '../ui/avatar.tsx'
import { ArrowLeftIcon, PlusIcon } from '../ui/icons.tsx'
import { promptDialog } from '../ui/modal.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { Cursors } from './cursors.tsx'
import { addEdge, addNode } from './map-actions.ts'
import { useMapSync } from './map-sync.ts'
import { MapTools } from './map-tools.tsx'
import {
  type CanvasUi,
  NODE_TYPES,
  type ThoughtData,
  type ThoughtNode,
  UiContext,
} from './thought.tsx'

/** Opens the map's live document for as long as the canvas shows it. */
function useMapDoc(mapId: string): LiveDoc {
  const { live, org } = useWorkspace()
  const [opened] = useState(() => live.open(mapDocName(org.id, mapId)))
  const [doc, setDoc] = useState(opened)
  useEffect(() => () => live.release(opened), [live, opened])
  // The map started over as a new generation (a re-base): the fresh copy is the map.
  useEffect(
    () =>
      live.onReplaced((name, next) => {
        if (name === opened.name) setDoc(next)
      }),
    [live, opened],
  )
  return doc
}

/** One mind map: pan and zoom, nodes and edges, live with everyone else on it. */
export function MapCanvas({ mapId }: { mapId: string }) {
  const doc = useMapDoc(mapId)
  return (
    <ReactFlowProvider>
      <Canvas key={doc.doc.clientID} live={doc} mapId={mapId} />
    </ReactFlowProvider>
  )
}

function Canvas({ live, mapId }: { live: LiveDoc; mapId: string }) {
  const { org } = useWorkspace()
  const status = useDocStatus(live)
  const peers = usePeers(live)
  const flow = useReactFlow<ThoughtNode, Edge>()
  const { nodes, edges, title, onNodesChange, onEdgesChange, onNodeDrag } = useMapSync(live, peers)
  const [editing, setEditing] = useState<string | null>(null)
  const fitted = useRef(false)

  useEffect(() => {
    if (fitted.current || nodes.length === 0) return
    fitted.current = true
    requestAnimationFrame(() => void flow.fitView({ padding: 0.3, maxZoom: 1.2 }))
  }, [nodes.length, flow])

  const cursorFrame = useRef(0)
  const onPointerMove = useCallback(
    (e: React.PointerEvent) => {
      const at = { x: e.clientX, y: e.clientY }
      if (cursorFrame.current) return
      cursorFrame.current = requestAnimationFrame(() => {
        cursorFrame.current = 0
        const p = flow.screenToFlowPosition(at)
        live.awareness.setLocalStateField('cursor', { x: Math.round(p.x), y: Math.round(p.y) })
      })
    },
    [flow, live],
  )

  const addAt = useCallback(
    (x: number, y: number) => {
      const id = addNode(live.doc, { x: x - 90, y: y - 24 })
      setEditing(id)
    },
    [live],
  )

  const addInView = () => {
    const el = document.querySelector('.map-flow')
    const r = el?.getBoundingClientRect()
    const p = flow.screenToFlowPosition({
      x: (r?.left ?? 0) + (r?.width ?? 800) / 2 + (Math.random() - 0.5) * 80,
      y: (r?.top ?? 0) + (r?.height ?? 600) / 2 + (Math.random() - 0.5) * 80,
    })
    addAt(p.x, p.y)
  }

  const renameMap = async () => {
    const next = await promptDialog({
      title: 'Rename map',
      label: 'Title',
      initial: title,
      confirmLabel: 'Rename',
      maxLength: LIMITS.mapTitle.max,
    })
    if (!next || next === title) return
    try {
      await appApi.renameMap(org.id, mapId, next)
    } catch (e) {
      toast('error', describeError(e))
    }
  }

  // Each edge leaves and enters on the sides facing the other node, also mid-drag.
  const shownEdges = useMemo(() => {
    const at = new Map(nodes.map((n) => [n.id, n]))
    return edges.map((e) => {
      const a = at.get(e.source)
      const b = at.get(e.target)
      if (!a || !b) return e
      const dx =
        b.position.x +
        (b.measured?.width ?? 180) / 2 -
        (a.position.x + (a.measured?.width ?? 180) / 2)
      const dy =
        b.position.y +
        (b.measured?.height ?? 48) / 2 -
        (a.position.y + (a.measured?.height ?? 48) / 2)
      const [sourceHandle, targetHandle] =
        Math.abs(dx) > Math.abs(dy) * 1.5
          ? dx > 0
            ? ['right', 'left']
            : ['left', 'right']
          : dy > 0
            ? ['bottom', 'top']
            : ['top', 'bottom']
      return e.sourceHandle === sourceHandle && e.targetHandle === targetHandle
        ? e
        : { ...e, sourceHandle, targetHandle }
    })
  }, [nodes, edges])

  const ui = useMemo<CanvasUi>(() => ({ live, mapId, editing, setEditing }), [live, mapId, editing])
  const others = [...new Map(peers.map((p) => [p.user.id, p])).values()]

  if (status.refused) {
    return (
      <div className="map-page">
        <div className="empty-state">
          <p>This map cannot be opened: {status.refused}.</p>
          <Link className="btn" to={`/o/${org.id}/maps`}>
            Back to mind maps
          </Link>
        </div>
      </div>
    )
  }

  return (
    <UiContext.Provider value={ui}>
      <div className="map-page">
        <header className="page-header">
          <Link
            className="icon-btn"
            to={`/o/${org.id}/maps`}
            aria-label="All mind maps"
            title="All mind maps"
          >
            <ArrowLeftIcon />
          </Link>
          <h1 className="page-title">
            <button
              type="button"
              className="title-button"
              onClick={() => void renameMap()}
              title="Rename"
            >
              {title || (status.loaded || status.synced ? 'Untitled map' : 'Loading…')}
            </button>
          </h1>
          <span className="header-spacer" />
          {others.length > 0 && (
            <ul className="presence" aria-label="Also on this map">
              {others.map((p) => (
                <li key={p.user.id} className="presence-item">
                  <Avatar id={p.user.id} name={p.user.name} color={p.user.color} size={26} />
                </li>
              ))}
            </ul>
          )}
          <MapTools orgId={org.id} mapId={mapId} />
          <button type="button" className="btn btn-primary" onClick={addInView}>
            <PlusIcon size={15} /> Add thought
          </button>
        </header>
        <section
          className="map-flow"
          aria-label="Mind map canvas: double-click to add a thought, drag from a dot to connect, Delete removes what is selected"
          onPointerMove={onPointerMove}
          onPointerLeave={() => live.awareness.setLocalStateField('cursor', null)}
          onDoubleClick={(e) => {
            const target = e.target as HTMLElement
            const node = target.closest<HTMLElement>('.react-flow__node')
            if (node?.dataset.id) {
              if (!target.closest('.thought-edit')) setEditing(node.dataset.id)
              return
            }
            if (!target.classList.contains('react-flow__pane')) return
            const p = flow.screenToFlowPosition({ x: e.clientX, y: e.clientY })
            addAt(p.x, p.y)
          }}
          onKeyDown={(e) => {
            // The canvas library focuses its node wrappers; Enter there edits the thought.
            const target = e.target as HTMLElement
            if (
              e.key === 'Enter' &&
              target.classList.contains('react-flow__node') &&
              target.dataset.id
            ) {
              e.preventDefault()
              setEditing(target.dataset.id)
            }
          }}
          data-testid="map-canvas"
        >
          <ReactFlow<ThoughtNode, Edge>
            nodes={nodes}
            edges={shownEdges}
            nodeTypes={NODE_TYPES}
            onNodesChange={onNodesChange}
            onEdgesChange={onEdgesChange}
            onNodeDrag={onNodeDrag}
            onConnect={(c) => {
              if (c.source && c.target) addEdge(live.doc, c.source, c.target)
            }}
            onConnectEnd={(event, state) => {
              // Dropping the line anywhere on a thought connects to it, not only on its dots.
              if (state.isValid || !state.fromNode) return
              const point = 'changedTouches' in event ? event.changedTouches[0] : event
              if (!point) return
              const target = document
                .elementFromPoint(point.clientX, point.clientY)
                ?.closest<HTMLElement>('.react-flow__node')?.dataset.id
              if (target && target !== state.fromNode.id)
                addEdge(live.doc, state.fromNode.id, target)
            }}
            zoomOnDoubleClick={false}
            connectionMode={ConnectionMode.Loose}
            deleteKeyCode={['Delete', 'Backspace']}
            minZoom={0.1}
            maxZoom={2.5}
            colorMode="system"
            proOptions={{ hideAttribution: true }}
            defaultEdgeOptions={{ style: { strokeWidth: 2 } }}
          >
            <Background gap={24} size={1.5} />
            <Controls showInteractive={false} />
            <MiniMap pannable zoomable nodeColor={(n) => (n.data as ThoughtData).color} />
            <Cursors peers={peers} />
          </ReactFlow>
          {nodes.length === 0 && (status.loaded || status.synced) && (
            <p className="map-empty">Double-click anywhere to add the first thought.</p>
          )}
        </section>
      </div>
    </UiContext.Provider>
  )
}
