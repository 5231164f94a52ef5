import { type ReactNode, useCallback, useEffect, useState } from 'react'
import { describeError } from '../api/http.ts'
import { CopyButton } from '../ui/copy-button.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'

/**
 * A list an admin screen shows (keys, webhooks): loaded once `enabled`, with the error of
 * the last load, and `reload` to call after a change.
 */
export function useAdminList<T>(fetch: () => Promise<readonly T[]>, enabled: boolean) {
  const [items, setItems] = useState<readonly T[]>()
  const [error, setError] = useState<string>()
  const reload = useCallback(async () => {
    try {
      setItems(await fetch())
      setError(undefined)
    } catch (e) {
      setError(describeError(e))
    }
  }, [fetch])
  useEffect(() => {
    if (enabled) void reload()
  }, [enabled, reload])
  return { items, error, reload }
}

/** A secret shown this once (a new key, a webhook's signing secret), with a copy button. */
export function ShownOnce(props: {
  children: ReactNode
  value: string
  copyLabel: string
  testId?: string
  valueTestId: string
  /** Shown under the value: how to use it. */
  usage?: ReactNode
  onDone: () => void
}) {
  return (
    <div className="secret-box" role="status" data-testid={props.testId}>
      <p>{props.children}</p>
      <div className="secret-row">
        <code data-testid={props.valueTestId}>{props.value}</code>
        <CopyButton text={props.value} label={props.copyLabel} />
      </div>
      {props.usage}
      <button type="button" className="btn btn-ghost btn-small" onClick={props.onDone}>
        I have stored it
      </button>
    </div>
  )
}

/**
 * A settings form's submission: `busy` while it runs (its button disabled meanwhile), and
 * a failure told in an error toast, in words. The pattern every settings form shares.
 */
export function useSubmit(): [boolean, (work: () => Promise<void>) => Promise<void>] {
  const [busy, setBusy] = useState(false)
  const submit = useCallback(async (work: () => Promise<void>) => {
    setBusy(true)
    try {
      await work()
    } catch (err) {
      toast('error', describeError(err))
    } finally {
      setBusy(false)
    }
  }, [])
  return [busy, submit]
}

/** Shown instead of a section a member may not manage. */
export function NeedsAdmin({ what }: { what: string }) {
  const { org } = useWorkspace()
  return (
    <div className="notice">
      <p>
        {what} are managed by the organisation's owners and admins. You are a{' '}
        <strong>{org.role}</strong> of {org.name}.
      </p>
    </div>
  )
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—'
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? '—' : d.toLocaleString()
}
