import { type FormEvent, useCallback, useEffect, useState } from 'react'
import { LIMITS } from '../../../shared/constants.ts'
import { appApi, type MindMapSummary } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { relativeTime } from '../card/comments.tsx'
import { Link, navigate } from '../router.tsx'
import { MapIcon, MoreIcon, PlusIcon } from '../ui/icons.tsx'
import { Labeled } from '../ui/labeled.tsx'
import { Menu } from '../ui/menu.tsx'
import { confirmDialog, Modal, promptDialog } from '../ui/modal.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { MapCanvas } from './map-canvas.tsx'

const listKey = (orgId: string) => `corkboard.maps.${orgId}`

function cachedList(orgId: string): MindMapSummary[] | undefined {
  try {
    const data: unknown = JSON.parse(localStorage.getItem(listKey(orgId)) ?? 'null')
    if (!Array.isArray(data)) return undefined
    return data.filter(
      (m): m is MindMapSummary =>
        typeof m === 'object' &&
        m !== null &&
        typeof m.id === 'string' &&
        typeof m.title === 'string' &&
        typeof m.updatedAt === 'string',
    )
  } catch {
    return undefined
  }
}

/** Mind maps: the list (most recently changed first), or one map's canvas. */
export default function MapsPage({ mapId }: { mapId: string | undefined }) {
  if (mapId) return <MapCanvas key={mapId} mapId={mapId} />
  return <MapList />
}

function MapList() {
  const { org, board } = useWorkspace()
  const [maps, setMaps] = useState<MindMapSummary[] | undefined>(() => cachedList(org.id))
  const [offline, setOffline] = useState<string>()
  const [creating, setCreating] = useState(false)

  const load = useCallback(async () => {
    try {
      const list = (await appApi.maps(org.id)).maps
      setMaps(list)
      setOffline(undefined)
      localStorage.setItem(listKey(org.id), JSON.stringify(list))
    } catch (e) {
      setOffline(describeError(e))
    }
  }, [org.id])

  useEffect(() => {
    void load()
    // Agents and teammates create and change maps too: the server says so on the board
    // document, which the workspace keeps open; after a reconnection the list is read
    // again, since notices sent meanwhile were missed.
    let synced = board.status.synced
    const offNotice = board.onNotice((notice) => {
      if (notice.type === 'maps-changed') void load()
    })
    const offStatus = board.subscribe(() => {
      if (board.status.synced && !synced) void load()
      synced = board.status.synced
    })
    window.addEventListener('focus', load)
    return () => {
      offNotice()
      offStatus()
      window.removeEventListener('focus', load)
    }
  }, [load, board])

  const create = async (title: string) => {
    try {
      const { map } = await appApi.createMap(org.id, title)
      navigate(`/o/${org.id}/maps/${map.id}`)
    } catch (e) {
      toast('error', describeError(e))
    }
  }

  const remove = async (m: MindMapSummary) => {
    const ok = await confirmDialog({
      title: `Delete “${m.title}”?`,
      message: 'The map and everything on it are deleted permanently.',
      confirmLabel: 'Delete map',
      danger: true,
    })
    if (!ok) return
    try {
      await appApi.deleteMap(org.id, m.id)
      toast('success', `“${m.title}” was deleted`)
      await load()
    } catch (e) {
      toast('error', describeError(e))
    }
  }

  const rename = async (m: MindMapSummary) => {
    const title = await promptDialog({
      title: 'Rename map',
      label: 'Title',
      initial: m.title,
      confirmLabel: 'Rename',
      maxLength: LIMITS.mapTitle.max,
    })
    if (!title || title === m.title) return
    try {
      await appApi.renameMap(org.id, m.id, title)
      await load()
    } catch (e) {
      toast('error', describeError(e))
    }
  }

  return (
    <div className="maps-page">
      <header className="page-header">
        <h1 className="page-title">Mind maps</h1>
        <span className="header-spacer" />
        <button type="button" className="btn btn-primary" onClick={() => setCreating(true)}>
          <PlusIcon size={15} /> New map
        </button>
      </header>
      {offline && (
        <p className="notice" role="status">
          The list could not be refreshed ({offline}). Maps opened before still open offline.
        </p>
      )}
      {maps && maps.length === 0 && (
        <div className="empty-state">
          <MapIcon size={32} />
          <p>No mind maps yet. Start one and think out loud with your team and your agents.</p>
          <button type="button" className="btn btn-primary" onClick={() => setCreating(true)}>
            Create a map
          </button>
        </div>
      )}
      <ul className="map-grid" aria-label="Mind maps, most recently changed first">
        {maps?.map((m) => (
          <li key={m.id} className="map-tile" data-testid="map-tile">
            <Link to={`/o/${org.id}/maps/${m.id}`} className="map-tile-link">
              <span className="map-tile-icon" aria-hidden="true">
                <MapIcon size={20} />
              </span>
              <span className="map-tile-title">{m.title}</span>
              <span className="muted small">Changed {relativeTime(m.updatedAt)}</span>
            </Link>
            <Menu
              label={`Actions for map ${m.title}`}
              trigger={<MoreIcon />}
              align="end"
              className="map-tile-menu"
              items={[
                { label: 'Rename…', onSelect: () => void rename(m) },
                { label: 'Delete…', danger: true, onSelect: () => void remove(m) },
              ]}
            />
          </li>
        ))}
      </ul>
      <NewMapDialog open={creating} onClose={() => setCreating(false)} onCreate={create} />
    </div>
  )
}

function NewMapDialog({
  open,
  onClose,
  onCreate,
}: {
  open: boolean
  onClose: () => void
  onCreate: (title: string) => Promise<void>
}) {
  const [busy, setBusy] = useState(false)
  const submit = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const title = String(new FormData(e.currentTarget).get('title')).trim()
    if (!title) return
    setBusy(true)
    await onCreate(title)
    setBusy(false)
    onClose()
  }
  return (
    <Modal open={open} onClose={onClose} title="New mind map">
      <form className="form" onSubmit={submit}>
        <Labeled label="Title">
          {(p) => (
            <input
              {...p}
              name="title"
              required
              maxLength={LIMITS.mapTitle.max}
              // biome-ignore lint/a11y/noAutofocus: the dialog exists to type this title
              autoFocus
            />
          )}
        </Labeled>
        <div className="modal-actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={busy}>
            Create map
          </button>
        </div>
      </form>
    </Modal>
  )
}
