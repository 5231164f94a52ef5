import { useEffect, useRef } from 'react'
import { useLocation } from '../router.tsx'
import { Store, useStore } from '../store.ts'
import { CloseIcon } from './icons.tsx'

export interface Toast {
  id: number
  /** When it was shown (performance.now()). */
  at: number
  /** The page (path) it was shown on: it leaves when the person goes elsewhere. */
  page: string
  kind: 'info' | 'success' | 'error' | 'revert'
  message: string
  /** Something to act on from the toast, e.g. open the card the server reverted. */
  action?: { label: string; run: () => void }
}

const toasts = new Store<readonly Toast[]>([])
let next = 1

export function dismiss(id: number): void {
  toasts.set((list) => list.filter((t) => t.id !== id))
}

/** Shows a message in words; errors and reverts stay longer than confirmations. */
export function toast(kind: Toast['kind'], message: string, action?: Toast['action']): number {
  const id = next++
  toasts.set((list) => [
    ...list.slice(-4),
    {
      id,
      at: performance.now(),
      page: location.pathname,
      kind,
      message,
      ...(action ? { action } : {}),
    },
  ])
  setTimeout(() => dismiss(id), kind === 'error' || kind === 'revert' ? 9000 : 4000)
  return id
}

/**
 * A toast belongs to the page it was shown on: going to another page dismisses the other
 * pages' toasts, however recent (a refusal raised just before leaving the board must not
 * follow the person to Settings). A change of query (a card panel opening) stays on the page.
 */
function dismissOtherPages(page: string): void {
  toasts.set((list) => {
    const kept = list.filter((t) => t.page === page)
    return kept.length === list.length ? list : kept
  })
}

export function Toasts() {
  const { pathname } = useLocation()
  const shownOn = useRef(pathname)
  useEffect(() => {
    if (shownOn.current === pathname) return
    shownOn.current = pathname
    dismissOtherPages(pathname)
  }, [pathname])
  const list = useStore(toasts)
  return (
    <section className="toasts" aria-label="Notifications">
      <div role="status" aria-live="polite" className="toast-stack">
        {list
          .filter((t) => t.kind === 'info' || t.kind === 'success')
          .map((t) => (
            <ToastView key={t.id} toast={t} />
          ))}
      </div>
      <div role="alert" aria-live="assertive" className="toast-stack">
        {list
          .filter((t) => t.kind === 'error' || t.kind === 'revert')
          .map((t) => (
            <ToastView key={t.id} toast={t} />
          ))}
      </div>
    </section>
  )
}

function ToastView({ toast: t }: { toast: Toast }) {
  return (
    <div className={`toast toast-${t.kind}`} data-testid={`toast-${t.kind}`}>
      <span className="toast-message">{t.message}</span>
      {t.action && (
        <button
          type="button"
          className="btn btn-ghost btn-small"
          onClick={() => {
            t.action?.run()
            dismiss(t.id)
          }}
        >
          {t.action.label}
        </button>
      )}
      <button
        type="button"
        className="icon-btn"
        aria-label="Dismiss notification"
        onClick={() => dismiss(t.id)}
      >
        <CloseIcon size={14} />
      </button>
    </div>
  )
}
