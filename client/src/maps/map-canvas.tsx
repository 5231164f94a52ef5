import '@xyflow/react/dist/style.css'
import {
  applyEdgeChanges,
  applyNodeChanges,
  Background,
  ConnectionMode,
  Controls,
  type Edge,
  type EdgeChange,
  Handle,
  MiniMap,
  type Node,
  type NodeChange,
  type NodeProps,
  NodeToolbar,
  Position,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
  useStore,
  ViewportPortal,
} from '@xyflow/react'
import {
  createContext,
  memo,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useState,
} from 'react'
import { mapDocName } from '../../../shared/board-doc.ts'
import { LIMITS } from '../../../shared/constants.ts'
import { mapDocMaps, readEdge, readMapTitle, readNode } from '../../../shared/map-doc.ts'
import { appApi } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import type { LiveDoc } from '../live/live-doc.ts'
import { type Peer, useDocStatus, usePeers } from '../live/use-live.ts'
import { Link } from '../router.tsx'
import { Avatar } from '../ui/avatar.tsx'
import { ArrowLeftIcon, ImageIcon, PlusIcon, TrashIcon } from '../ui/icons.tsx'
import { promptDialog } from '../ui/modal.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import {
  addEdge,
  addNode,
  deleteEdges,
  deleteNodes,
  moveNodes,
  NODE_COLORS,
  setNodeColor,
  setNodeText,
} from './map-actions.ts'

interface ThoughtData extends Record<string, unknown> {
  text: string
  color: string
  imageUrl: string | null
}
type ThoughtNode = Node<ThoughtData, 'thought'>

interface CanvasUi {
  live: LiveDoc
  mapId: string
  editing: string | null
  setEditing: (id: string | null) => void
}
const UiContext = createContext<CanvasUi | undefined>(undefined)
function useUi(): CanvasUi {
  const ui = useContext(UiContext)
  if (!ui) throw new Error('outside the canvas')
  return ui
}

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

function cursorOf(v: unknown): { x: number; y: number } | null {
  if (typeof v !== 'object' || v === null) return null
  const c = v as Record<string, unknown>
  return typeof c.x === 'number' && typeof c.y === 'number' ? { x: c.x, y: c.y } : null
}

/** Opens the map's live document for as long as the canvas shows it. */
function useMapDoc(mapId: string): LiveDoc {
  const { live, org } = useWorkspace()
  const [doc] = useState(() => live.open(mapDocName(org.id, mapId)))
  useEffect(() => () => live.release(doc), [live, doc])
  return doc
}

/** One mind map: pan and zoom, nodes and edges, live with everyone else on it. */
export function MapCanvas({ mapId }: { mapId: string }) {
  const doc = useMapDoc(mapId)
  return (
    <ReactFlowProvider>
      <Canvas live={doc} mapId={mapId} />
    </ReactFlowProvider>
  )
}

function Canvas({ live, mapId }: { live: LiveDoc; mapId: string }) {
  const { org } = useWorkspace()
  const status = useDocStatus(live)
  const peers = usePeers(live)
  const flow = useReactFlow<ThoughtNode, Edge>()
  const [nodes, setNodes] = useState<ThoughtNode[]>([])
  const [edges, setEdges] = useState<Edge[]>([])
  const [title, setTitle] = useState(() => readMapTitle(live.doc))
  const [editing, setEditing] = useState<string | null>(null)
  const fitted = useRef(false)

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

  useEffect(() => {
    if (fitted.current || nodes.length === 0) return
    fitted.current = true
    requestAnimationFrame(() => void flow.fitView({ padding: 0.3, maxZoom: 1.2 }))
  }, [nodes.length, flow])

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

/** The others' pointers, drawn in map coordinates and kept the same size at any zoom. */
function Cursors({ peers }: { peers: Peer[] }) {
  const zoom = useStore((s) => s.transform[2])
  return (
    <ViewportPortal>
      {peers.map((p) => {
        const c = cursorOf(p.state.cursor)
        if (!c) return null
        return (
          <div
            key={p.clientId}
            className="peer-cursor"
            style={{ transform: `translate(${c.x}px, ${c.y}px) scale(${1 / zoom})` }}
            aria-hidden="true"
          >
            <svg width="18" height="18" viewBox="0 0 18 18" aria-hidden="true">
              <path
                d="M1 1l6 15 2.5-6.5L16 7z"
                fill={p.user.color}
                stroke="white"
                strokeWidth="1.2"
              />
            </svg>
            <span style={{ background: p.user.color }}>{p.user.name}</span>
          </div>
        )
      })}
    </ViewportPortal>
  )
}

async function fileToBase64(file: File): Promise<string> {
  const url = await new Promise<string>((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => resolve(String(reader.result))
    reader.onerror = () => reject(reader.error)
    reader.readAsDataURL(file)
  })
  return url.slice(url.indexOf(',') + 1)
}

const Thought = memo(function Thought({ id, data, selected }: NodeProps<ThoughtNode>) {
  const { live, mapId, editing, setEditing } = useUi()
  const { org } = useWorkspace()
  const file = useRef<HTMLInputElement>(null)
  const isEditing = editing === id
  const [draft, setDraft] = useState(data.text)
  useEffect(() => {
    if (isEditing) setDraft(data.text)
  }, [isEditing, data.text])
  // What the person types next is the thought's text, wherever the focus was (the "Add
  // thought" button, the page after a double-click). A focus call on mount is not enough:
  // the canvas shows a new node only once it has measured it, and an element that is not
  // shown cannot take the focus, so it is asked again on each frame until it has it.
  const editor = useRef<HTMLTextAreaElement>(null)
  useEffect(() => {
    if (!isEditing) return
    let frame = 0
    let tries = 0
    const take = () => {
      const el = editor.current
      if (!el || document.activeElement === el) return
      el.focus({ preventScroll: true })
      if (document.activeElement === el) el.select()
      else if (++tries < 120) frame = requestAnimationFrame(take)
    }
    take()
    return () => cancelAnimationFrame(frame)
  }, [isEditing])

  const commit = () => {
    setNodeText(live.doc, id, draft)
    setEditing(null)
  }

  const upload = async (f: File | undefined) => {
    if (!f) return
    if (f.size > LIMITS.imageBytes) {
      toast('error', 'Images are at most 3 MB')
      return
    }
    try {
      await appApi.setNodeImage(org.id, mapId, id, await fileToBase64(f))
    } catch (e) {
      toast('error', describeError(e))
    }
  }

  return (
    <div
      className={`thought${selected ? ' selected' : ''}`}
      style={{ '--accent': data.color } as React.CSSProperties}
      data-node-id={id}
    >
      <NodeToolbar
        isVisible={selected && !isEditing}
        position={Position.Top}
        className="thought-toolbar"
      >
        {NODE_COLORS.map((c) => (
          <button
            key={c}
            type="button"
            className={`color-dot${c === data.color ? ' active' : ''}`}
            style={{ background: c }}
            aria-label={`Colour ${c}`}
            aria-pressed={c === data.color}
            onClick={() => setNodeColor(live.doc, id, c)}
          />
        ))}
        <button
          type="button"
          className="icon-btn"
          aria-label="Set an image"
          title="Set an image"
          onClick={() => file.current?.click()}
        >
          <ImageIcon size={15} />
        </button>
        {data.imageUrl && (
          <button
            type="button"
            className="btn btn-ghost btn-small"
            onClick={() =>
              void appApi
                .clearNodeImage(org.id, mapId, id)
                .catch((e: unknown) => toast('error', describeError(e)))
            }
          >
            Remove image
          </button>
        )}
        <button
          type="button"
          className="icon-btn danger"
          aria-label="Delete thought"
          title="Delete thought"
          onClick={() => deleteNodes(live.doc, [id])}
        >
          <TrashIcon size={15} />
        </button>
        <input
          ref={file}
          type="file"
          accept="image/png,image/jpeg,image/webp,image/gif"
          hidden
          onChange={(e) => {
            void upload(e.target.files?.[0])
            e.target.value = ''
          }}
        />
      </NodeToolbar>
      {(['top', 'right', 'bottom', 'left'] as const).map((side) => (
        <Handle
          key={side}
          id={side}
          type="source"
          position={
            side === 'top'
              ? Position.Top
              : side === 'right'
                ? Position.Right
                : side === 'bottom'
                  ? Position.Bottom
                  : Position.Left
          }
          className="thought-handle"
        />
      ))}
      {data.imageUrl && (
        <img className="thought-image" src={data.imageUrl} alt="" draggable={false} />
      )}
      {isEditing ? (
        <textarea
          ref={editor}
          className="thought-edit nodrag nowheel"
          aria-label="Thought text"
          value={draft}
          maxLength={LIMITS.nodeText.max}
          onChange={(e) => setDraft(e.target.value)}
          onBlur={commit}
          onKeyDown={(e) => {
            e.stopPropagation()
            if (e.key === 'Enter' && !e.shiftKey) {
              e.preventDefault()
              commit()
            }
            if (e.key === 'Escape') setEditing(null)
          }}
        />
      ) : (
        <p className="thought-text">{data.text || <span className="muted">Empty thought</span>}</p>
      )}
    </div>
  )
})

const NODE_TYPES = { thought: Thought }
