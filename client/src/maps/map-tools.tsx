import { useState } from 'react'
import { z } from 'zod/mini'
import { api, describeError } from '../api/http.ts'
import { toast } from '../ui/toast.tsx'

/**
 * The map page's "Tidy up" button and "Export" menu. Tidy up runs layout_map on the
 * server (one write: every open canvas, this one included, rearranges through the live
 * document); each export is a plain download link to the app's export route, which names
 * the file after the map.
 */

const EXPORTS = [
  { format: 'mermaid', label: 'Mermaid' },
  { format: 'markdown', label: 'Markdown outline' },
  { format: 'svg', label: 'SVG image' },
  { format: 'png', label: 'PNG image' },
] as const

/** Kept here rather than in the shared stylesheet: this menu is the only one of its kind. */
const MENU = {
  position: 'absolute',
  right: 0,
  top: 'calc(100% + 4px)',
  zIndex: 20,
  margin: 0,
  padding: '6px 0',
  listStyle: 'none',
  minWidth: 180,
  background: 'var(--surface)',
  border: '1px solid var(--border)',
  borderRadius: 8,
  boxShadow: 'var(--shadow-2)',
  lineHeight: 2,
  paddingInline: 12,
} as const

const laidOut = z.object({
  nodes: z.array(z.object({ id: z.string(), x: z.number(), y: z.number() })),
})

const mapPath = (orgId: string, mapId: string) =>
  `/orgs/${encodeURIComponent(orgId)}/maps/${encodeURIComponent(mapId)}`

export function MapTools({ orgId, mapId }: { orgId: string; mapId: string }) {
  const [busy, setBusy] = useState(false)
  const tidy = async () => {
    setBusy(true)
    try {
      await api('POST', `${mapPath(orgId, mapId)}/layout`, laidOut, {})
    } catch (error) {
      toast('error', `Could not tidy up: ${describeError(error)}`)
    } finally {
      setBusy(false)
    }
  }
  return (
    <>
      <button type="button" className="btn" onClick={() => void tidy()} disabled={busy}>
        Tidy up
      </button>
      <details className="map-export" style={{ position: 'relative' }}>
        <summary className="btn">Export</summary>
        <ul className="map-export-menu" aria-label="Export as" style={MENU}>
          {EXPORTS.map(({ format, label }) => (
            <li key={format}>
              <a href={`/api/app${mapPath(orgId, mapId)}/export?format=${format}`} download>
                {label}
              </a>
            </li>
          ))}
        </ul>
      </details>
    </>
  )
}
