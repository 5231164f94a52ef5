import { useStore, ViewportPortal } from '@xyflow/react'
import type { Peer } from '../live/use-live.ts'

/** A peer's cursor from its awareness state (wire data: checked), or null. */
function cursorOf(v: unknown): { x: number; y: number } | null {
  if (typeof v !== 'object' || v === null) return null
  const c = v as Record<string, unknown>
  return typeof c.x === 'number' && typeof c.y === 'number' ? { x: c.x, y: c.y } : null
}

/** The others' pointers, drawn in map coordinates and kept the same size at any zoom. */
export function Cursors({ peers }: { peers: Peer[] }) {
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
