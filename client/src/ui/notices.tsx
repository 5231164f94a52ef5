import { useState } from 'react'
import { describeError } from '../api/http.ts'
import { Store, useStore } from '../store.ts'
import { CopyButton } from './copy-button.tsx'
import { CloseIcon } from './icons.tsx'

/**
 * Something the person must see and decide on, which stays until they do: work of theirs
 * the server could not apply (an edit made offline to a card archived meanwhile, a comment
 * written offline on a card deleted meanwhile). Unlike a toast it never times out, and it
 * carries the words themselves so nothing is silently lost.
 */
export interface Notice {
  id: number
  title: string
  message: string
  /** The person's own words, shown and copyable. */
  text?: string
  actions?: { label: string; run: () => Promise<void> }[]
}

const notices = new Store<readonly Notice[]>([])
let next = 1

export function notify(notice: Omit<Notice, 'id'>): number {
  const id = next++
  notices.set((list) => [...list, { id, ...notice }])
  return id
}

export function dismissNotice(id: number): void {
  notices.set((list) => list.filter((n) => n.id !== id))
}

export function Notices() {
  const list = useStore(notices)
  if (list.length === 0) return null
  return (
    <section className="notices" aria-label="Needs your attention">
      {list.map((n) => (
        <NoticeView key={n.id} notice={n} />
      ))}
    </section>
  )
}

function NoticeView({ notice: n }: { notice: Notice }) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string>()
  return (
    <div className="notice" role="alert" data-testid="notice">
      <div className="notice-head">
        <strong>{n.title}</strong>
        <button
          type="button"
          className="icon-btn"
          aria-label="Dismiss"
          onClick={() => dismissNotice(n.id)}
        >
          <CloseIcon size={14} />
        </button>
      </div>
      <p>{n.message}</p>
      {n.text !== undefined && <pre className="notice-text">{n.text}</pre>}
      {error && <p className="form-error">{error}</p>}
      <div className="notice-actions">
        {n.text !== undefined && <CopyButton text={n.text} label="Copy text" />}
        {n.actions?.map((a) => (
          <button
            key={a.label}
            type="button"
            className="btn btn-primary btn-small"
            disabled={busy}
            onClick={async () => {
              setBusy(true)
              try {
                await a.run()
                dismissNotice(n.id)
              } catch (e) {
                setError(describeError(e))
              } finally {
                setBusy(false)
              }
            }}
          >
            {a.label}
          </button>
        ))}
      </div>
    </div>
  )
}
