import { Handle, type Node, type NodeProps, NodeToolbar, Position } from '@xyflow/react'
import { createContext, memo, useContext, useEffect, useRef, useState } from 'react'
import { LIMITS } from '../../../shared/constants.ts'
import { appApi } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import type { LiveDoc } from '../live/live-doc.ts'
import { ImageIcon, TrashIcon } from '../ui/icons.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { deleteNodes, NODE_COLORS, setNodeColor, setNodeText } from './map-actions.ts'

export interface ThoughtData extends Record<string, unknown> {
  text: string
  color: string
  imageUrl: string | null
}

export type ThoughtNode = Node<ThoughtData, 'thought'>

export interface CanvasUi {
  live: LiveDoc
  mapId: string
  editing: string | null
  setEditing: (id: string | null) => void
}

/** What the canvas hands its thoughts: the document and who is being edited. */
export const UiContext = createContext<CanvasUi | undefined>(undefined)

export function useUi(): CanvasUi {
  const ui = useContext(UiContext)
  if (!ui) throw new Error('outside the canvas')
  return ui
}

/** A file's bytes as base64 (what the image routes take). */
async function fileToBase64(file: File): Promise<string> {
  const url = await new Promise<string>((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => resolve(String(reader.result))
    reader.onerror = () => reject(reader.error)
    reader.readAsDataURL(file)
  })
  return url.slice(url.indexOf(',') + 1)
}

/**
 * One thought on the canvas: its text (edited in place), colour and image, handles to draw
 * edges from, and a toolbar while selected.
 */
export const Thought = memo(function Thought({ id, data, selected }: NodeProps<ThoughtNode>) {
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

export const NODE_TYPES = { thought: Thought }
