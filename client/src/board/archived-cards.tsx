import { useCallback, useEffect, useState } from 'react'
import { type ArchivedTask, appApi } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { setQuery } from '../router.tsx'
import { confirmDialog, Modal } from '../ui/modal.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'

/**
 * Archived cards, newest archive first, a page at a time from the app API (they are not
 * in the board document): each can be restored to the board or deleted for good.
 */
export function ArchivedCards({ open, onClose }: { open: boolean; onClose: () => void }) {
  const { org, store } = useWorkspace()
  const [tasks, setTasks] = useState<readonly ArchivedTask[]>([])
  const [next, setNext] = useState<string | null>(null)
  const [loading, setLoading] = useState(false)
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState<string>()

  const load = useCallback(
    async (before: string | null) => {
      setLoading(true)
      setError(undefined)
      try {
        const page = await appApi.archivedTasks(org.id, { limit: 50, before })
        setTasks((shown) => (before ? [...shown, ...page.tasks] : page.tasks))
        setNext(page.nextBefore)
      } catch (e) {
        setError(describeError(e))
      } finally {
        setLoading(false)
      }
    },
    [org.id],
  )

  useEffect(() => {
    if (!open) return
    setTasks([])
    setNext(null)
    void load(null)
  }, [open, load])

  const drop = (id: string) => setTasks((shown) => shown.filter((t) => t.id !== id))

  const restore = async (t: ArchivedTask) => {
    setBusy(t.id)
    try {
      await appApi.restoreTask(org.id, t.id)
      drop(t.id)
      toast('success', `“${t.title}” is back on the board`, {
        label: 'Open card',
        run: () => setQuery({ card: t.id }, { replace: false }),
      })
    } catch (e) {
      toast('error', describeError(e))
    } finally {
      setBusy(undefined)
    }
  }

  const remove = async (t: ArchivedTask) => {
    const ok = await confirmDialog({
      title: 'Delete this card?',
      message: `“${t.title}” is deleted with its comments, screenshots and claim. This cannot be undone.`,
      confirmLabel: 'Delete card',
      danger: true,
    })
    if (!ok) return
    setBusy(t.id)
    try {
      await appApi.deleteTask(org.id, t.id)
      drop(t.id)
    } catch (e) {
      toast('error', describeError(e))
    } finally {
      setBusy(undefined)
    }
  }

  return (
    <Modal open={open} onClose={onClose} title="Archived cards" className="modal-wide">
      {error && (
        <p className="form-error" role="alert">
          Could not load archived cards: {error}
        </p>
      )}
      {!loading && !error && tasks.length === 0 ? (
        <p className="muted">Nothing is archived.</p>
      ) : (
        <ul className="archived-list" aria-label="Archived cards" aria-busy={loading}>
          {tasks.map((t) => (
            <li key={t.id} data-testid="archived-card">
              <span className="archived-title">{t.title}</span>
              <span className="muted small">
                {store.column(t.columnId)?.title ?? 'Column deleted'}
                {t.projectName ? ` · ${t.projectName}` : ''} · archived{' '}
                {t.archivedAt ? new Date(t.archivedAt).toLocaleDateString() : ''}
                {t.commentCount > 0 ? ` · ${t.commentCount} comments` : ''}
                {t.claim?.isLive ? ` · held by ${t.claim.holder}` : ''}
              </span>
              <button
                type="button"
                className="btn btn-small"
                disabled={busy === t.id || t.claim?.isLive}
                title={t.claim?.isLive ? `${t.claim.holder} is working on it` : undefined}
                onClick={() => void restore(t)}
              >
                Restore
              </button>
              <button
                type="button"
                className="btn btn-small btn-danger"
                disabled={busy === t.id}
                onClick={() => void remove(t)}
              >
                Delete
              </button>
            </li>
          ))}
        </ul>
      )}
      {loading && <p className="muted">Loading…</p>}
      {next && !loading && (
        <button type="button" className="btn btn-small" onClick={() => void load(next)}>
          Show more
        </button>
      )}
    </Modal>
  )
}
