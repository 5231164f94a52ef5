import { type ChangeEvent, useRef, useState } from 'react'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { NeedsAdmin } from './admin-parts.tsx'

/** What POST /import answers (docs/export.md). */
interface ImportReport {
  dryRun: boolean
  source: { orgId: string; name: string; exportedAt: string; kind?: string }
  counts: Record<string, number>
  /** The archive's members who are not members here, invited (a preview: a null token). */
  invites?: { email: string; role: string; token: string | null }[]
  notes: string[]
  mapped?: Record<string, string>
  unmapped?: Record<string, string>
}

type Progress = { done: number; total: number | null }

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`
  return `${(n / 1024 / 1024).toFixed(1)} MB`
}

/** How the file goes to the server: archives as bytes, Trello and GitHub JSON, Linear CSV. */
function typeOf(file: File): string {
  const name = file.name.toLowerCase()
  if (name.endsWith('.json')) return 'application/json'
  if (name.endsWith('.csv')) return 'text/csv'
  return 'application/octet-stream'
}

const LABELS: Record<string, string> = {
  columns: 'Columns',
  projects: 'Projects',
  cards: 'Cards on the board',
  archived: 'Archived cards',
  comments: 'Comments',
  attachments: 'Screenshots',
  claims: 'Claim records',
  maps: 'Mind maps',
  nodes: 'Map nodes',
  edges: 'Map edges',
  webhooks: 'Webhooks',
  files: 'Stored files',
  members: 'Members (listed, not created)',
  apiKeys: 'API keys (records only)',
}

/** The import sent with upload progress (fetch cannot report it); resolves with the answer. */
function send(
  url: string,
  file: File,
  onProgress: (p: Progress) => void,
): Promise<{ status: number; body: ImportReport & { error?: string } }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest()
    xhr.open('POST', url)
    xhr.setRequestHeader('content-type', typeOf(file))
    xhr.upload.onprogress = (e) => onProgress({ done: e.loaded, total: e.total || file.size })
    xhr.onload = () => {
      try {
        resolve({ status: xhr.status, body: JSON.parse(xhr.responseText) })
      } catch {
        reject(new Error(`The server answered ${xhr.status}`))
      }
    }
    xhr.onerror = () => reject(new Error('The upload failed: the server could not be reached'))
    xhr.send(file)
  })
}

/** Settings → Data: the organisation's export, and an import into an empty organisation. */
export function DataSettings() {
  const { org, canAdmin } = useWorkspace()
  const [exporting, setExporting] = useState<Progress>()
  const [exported, setExported] = useState<{ bytes: number; url: string; name: string }>()
  const [file, setFile] = useState<File>()
  const [preview, setPreview] = useState<ImportReport>()
  const [importing, setImporting] = useState<Progress & { phase: 'checking' | 'importing' }>()
  const [done, setDone] = useState<ImportReport>()
  const [error, setError] = useState<string>()
  const input = useRef<HTMLInputElement>(null)

  if (!canAdmin) return <NeedsAdmin what="Exports and imports" />

  const startExport = async () => {
    setExported(undefined)
    setExporting({ done: 0, total: null })
    try {
      const res = await fetch(`/api/app/orgs/${org.id}/export`)
      if (!res.ok || !res.body) {
        const body = (await res.json().catch(() => ({}))) as { error?: string }
        throw new Error(body.error ?? `The export failed (${res.status})`)
      }
      const reader = res.body.getReader()
      const parts: Uint8Array[] = []
      let bytes = 0
      for (;;) {
        const { done: end, value } = await reader.read()
        if (end) break
        parts.push(value)
        bytes += value.length
        setExporting({ done: bytes, total: null })
      }
      const disposition = res.headers.get('content-disposition') ?? ''
      const name = /filename="([^"]+)"/.exec(disposition)?.[1] ?? 'corkboard-export.tar.gz'
      const url = URL.createObjectURL(new Blob(parts as BlobPart[], { type: 'application/gzip' }))
      setExported({ bytes, url, name })
      const a = document.createElement('a')
      a.href = url
      a.download = name
      a.click()
    } catch (e) {
      toast('error', e instanceof Error ? e.message : String(e))
    } finally {
      setExporting(undefined)
    }
  }

  const choose = async (e: ChangeEvent<HTMLInputElement>) => {
    const chosen = e.currentTarget.files?.[0]
    setFile(chosen)
    setPreview(undefined)
    setDone(undefined)
    setError(undefined)
    if (!chosen) return
    setImporting({ phase: 'checking', done: 0, total: chosen.size })
    try {
      const res = await send(`/api/app/orgs/${org.id}/import?dryRun=1`, chosen, (p) =>
        setImporting({ phase: 'checking', ...p }),
      )
      if (res.status !== 200) setError(res.body.error ?? `Refused (${res.status})`)
      else setPreview(res.body)
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err))
    } finally {
      setImporting(undefined)
    }
  }

  const runImport = async () => {
    if (!file) return
    setImporting({ phase: 'importing', done: 0, total: file.size })
    try {
      const res = await send(`/api/app/orgs/${org.id}/import`, file, (p) =>
        setImporting({ phase: 'importing', ...p }),
      )
      if (res.status !== 200) setError(res.body.error ?? `Refused (${res.status})`)
      else {
        setDone(res.body)
        setPreview(undefined)
        toast('success', `Imported ${res.body.source.name}`)
      }
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err))
    } finally {
      setImporting(undefined)
      if (input.current) input.current.value = ''
    }
  }

  const report = done ?? preview
  return (
    <div className="settings-stack">
      <section className="settings-card" aria-labelledby="export-heading">
        <h2 id="export-heading">Export</h2>
        <p className="muted">
          Everything this organisation holds, as one archive you keep: cards on the board and
          archived with their descriptions, comments and screenshots, claim records, mind maps,
          webhooks (without secrets) and members (without credentials). A gzipped tar of JSON Lines,
          readable with standard tools.
        </p>
        <button
          type="button"
          className="btn btn-primary"
          onClick={() => void startExport()}
          disabled={exporting !== undefined}
        >
          Download export
        </button>
        {exporting && (
          <div className="transfer-progress" role="status" data-testid="export-progress">
            <progress aria-label="Export progress" />
            <span>{formatBytes(exporting.done)} received</span>
          </div>
        )}
        {exported && (
          <p role="status" data-testid="export-done">
            Exported{' '}
            <a href={exported.url} download={exported.name}>
              {exported.name}
            </a>
            : <strong data-testid="export-size">{formatBytes(exported.bytes)}</strong>
          </p>
        )}
      </section>
      <section className="settings-card" aria-labelledby="import-heading">
        <h2 id="import-heading">Import</h2>
        <p className="muted">
          Into an empty organisation: a Corkboard export, a Trello board's JSON export, GitHub
          issues (<code>gh issue list --json …</code>) or Linear's CSV export. You see what it will
          create before anything is written.
        </p>
        <label className="field">
          <span>File to import</span>
          <input
            ref={input}
            type="file"
            accept=".gz,.tgz,.tar.gz,.json,.csv,application/gzip,application/json,text/csv"
            onChange={(e) => void choose(e)}
            disabled={importing !== undefined}
            data-testid="import-file"
          />
        </label>
        {importing && (
          <div className="transfer-progress" role="status" data-testid="import-progress">
            <progress
              aria-label={importing.phase === 'checking' ? 'Checking' : 'Import progress'}
              max={importing.total ?? undefined}
              value={importing.done}
            />
            <span>
              {importing.phase === 'checking' ? 'Checking' : 'Importing'}:{' '}
              {formatBytes(importing.done)}
              {importing.total ? ` of ${formatBytes(importing.total)}` : ''}
              {importing.total && importing.done >= importing.total ? ', writing…' : ''}
            </span>
          </div>
        )}
        {error && (
          <div className="notice" role="alert" data-testid="import-error">
            <p>{error}</p>
          </div>
        )}
        {report && (
          <div data-testid={done ? 'import-done' : 'import-preview'}>
            <h3>
              {done ? 'Imported' : 'Will create'} from “{report.source.name}”
              {report.source.kind ? ` (${report.source.kind})` : ''}
            </h3>
            <table className="table">
              <tbody>
                {Object.entries(report.counts)
                  .filter(([k]) => k !== 'fileBytes')
                  .map(([k, n]) => (
                    <tr key={k}>
                      <th scope="row">{LABELS[k] ?? k}</th>
                      <td data-testid={`count-${k}`}>{n}</td>
                    </tr>
                  ))}
              </tbody>
            </table>
            {report.unmapped && Object.keys(report.unmapped).length > 0 && (
              <>
                <h3>Fields with no place of their own</h3>
                <ul className="plain-list" data-testid="unmapped">
                  {Object.entries(report.unmapped).map(([k, v]) => (
                    <li key={k}>
                      <code>{k}</code>: {v}
                    </li>
                  ))}
                </ul>
              </>
            )}
            {report.invites && report.invites.length > 0 && (
              <>
                <h3>{done ? 'Invited: send each their link' : 'Will invite'}</h3>
                <ul className="plain-list" data-testid="import-invites">
                  {report.invites.map((i) => (
                    <li key={i.email}>
                      {i.email} ({i.role})
                      {i.token && (
                        <>
                          {' '}
                          <code className="invite-link">{`${location.origin}/invite/${i.token}`}</code>
                        </>
                      )}
                    </li>
                  ))}
                </ul>
              </>
            )}
            {report.notes.length > 0 && (
              <ul className="plain-list">
                {report.notes.map((n) => (
                  <li key={n}>{n}</li>
                ))}
              </ul>
            )}
            {!done && (
              <button
                type="button"
                className="btn btn-primary"
                onClick={() => void runImport()}
                disabled={importing !== undefined}
              >
                Import
              </button>
            )}
          </div>
        )}
      </section>
    </div>
  )
}
