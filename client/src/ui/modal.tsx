import { type ReactNode, useEffect, useId, useRef } from 'react'
import { Store, useStore } from '../store.ts'
import { CloseIcon } from './icons.tsx'

/**
 * A modal on the native <dialog>: the browser traps focus, closes on Escape and restores
 * focus to what opened it.
 */
export function Modal({
  open,
  onClose,
  title,
  children,
  className,
}: {
  open: boolean
  onClose: () => void
  title: string
  children: ReactNode
  className?: string
}) {
  const ref = useRef<HTMLDialogElement>(null)
  const titleId = useId()
  useEffect(() => {
    const d = ref.current
    if (!d) return
    if (open && !d.open) d.showModal()
    if (!open && d.open) d.close()
  }, [open])
  return (
    <dialog
      ref={ref}
      className={`modal ${className ?? ''}`}
      aria-labelledby={titleId}
      onClose={onClose}
    >
      {open && (
        <>
          <header className="modal-header">
            <h2 id={titleId}>{title}</h2>
            <button type="button" className="icon-btn" aria-label="Close" onClick={onClose}>
              <CloseIcon />
            </button>
          </header>
          <div className="modal-body">{children}</div>
        </>
      )}
    </dialog>
  )
}

interface ConfirmRequest {
  title: string
  message: ReactNode
  confirmLabel: string
  danger?: boolean
  resolve: (ok: boolean) => void
}

const pending = new Store<ConfirmRequest | undefined>(undefined)

/** Asks a yes/no question in a modal; resolves true only on the confirming button. */
export function confirmDialog(options: Omit<ConfirmRequest, 'resolve'>): Promise<boolean> {
  pending.get()?.resolve(false)
  return new Promise((resolve) => pending.set({ ...options, resolve }))
}

export function ConfirmHost() {
  const req = useStore(pending)
  const finish = (ok: boolean) => {
    req?.resolve(ok)
    pending.set(undefined)
  }
  return (
    <Modal open={req !== undefined} onClose={() => finish(false)} title={req?.title ?? ''}>
      <div className="confirm-message">{req?.message}</div>
      <div className="modal-actions">
        <button type="button" className="btn" onClick={() => finish(false)}>
          Cancel
        </button>
        <button
          type="button"
          className={`btn ${req?.danger ? 'btn-danger' : 'btn-primary'}`}
          onClick={() => finish(true)}
        >
          {req?.confirmLabel}
        </button>
      </div>
    </Modal>
  )
}

interface PromptRequest {
  title: string
  label: string
  initial: string
  confirmLabel: string
  maxLength: number
  resolve: (value: string | null) => void
}

const asking = new Store<PromptRequest | undefined>(undefined)

/** Asks for one line of text in a modal; resolves null when cancelled or left empty. */
export function promptDialog(options: Omit<PromptRequest, 'resolve'>): Promise<string | null> {
  asking.get()?.resolve(null)
  return new Promise((resolve) => asking.set({ ...options, resolve }))
}

export function PromptHost() {
  const req = useStore(asking)
  const id = useId()
  const finish = (value: string | null) => {
    req?.resolve(value?.trim() ? value.trim() : null)
    asking.set(undefined)
  }
  return (
    <Modal open={req !== undefined} onClose={() => finish(null)} title={req?.title ?? ''}>
      <form
        className="form"
        onSubmit={(e) => {
          e.preventDefault()
          finish(String(new FormData(e.currentTarget).get('value') ?? ''))
        }}
      >
        <div className="field">
          <label htmlFor={id}>{req?.label}</label>
          <input
            id={id}
            name="value"
            defaultValue={req?.initial}
            maxLength={req?.maxLength}
            required
            // biome-ignore lint/a11y/noAutofocus: the dialog exists to type this value
            autoFocus
          />
        </div>
        <div className="modal-actions">
          <button type="button" className="btn" onClick={() => finish(null)}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary">
            {req?.confirmLabel}
          </button>
        </div>
      </form>
    </Modal>
  )
}
