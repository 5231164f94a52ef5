import type { OrgLive } from '../live/org-live.ts'
import { useSyncState } from '../live/use-live.ts'
import { CloudIcon, CloudOffIcon, RefreshIcon } from './icons.tsx'

const LABELS = {
  synced: { text: 'Synced', hint: 'Everything is saved on the server.' },
  syncing: { text: 'Syncing…', hint: 'Sending and receiving changes.' },
  connecting: {
    text: 'Connecting…',
    hint: 'Reaching the server; your edits are kept on this device meanwhile.',
  },
  offline: {
    text: 'Offline',
    hint: 'Edits are saved on this device and sync when the connection is back.',
  },
} as const

/** Online / offline / syncing, in words and colour, announced politely when it changes. */
export function SyncIndicator({ live }: { live: OrgLive }) {
  const state = useSyncState(live)
  const label = LABELS[state]
  return (
    <div
      className={`sync-indicator sync-${state}`}
      role="status"
      aria-live="polite"
      data-sync-state={state}
      title={label.hint}
    >
      {state === 'offline' ? (
        <CloudOffIcon size={14} />
      ) : state === 'synced' ? (
        <CloudIcon size={14} />
      ) : (
        <RefreshIcon size={14} className="spin" />
      )}
      <span>{label.text}</span>
      <span className="sr-only">{label.hint}</span>
    </div>
  )
}
