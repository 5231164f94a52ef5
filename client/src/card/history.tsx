import { useCallback, useEffect, useRef, useState } from 'react'
import type { Priority, TaskType } from '../../../shared/constants.ts'
import { appApi, type HistoryEvent } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { PRIORITY_LABELS, TYPE_LABELS } from '../board/card.tsx'
import { memberName, useWorkspace } from '../workspace.tsx'
import { relativeTime } from './comments.tsx'

const FIELD_NAMES: Record<string, string> = {
  title: 'the title',
  type: 'the type',
  priority: 'the priority',
  projectId: 'the project',
  tags: 'the tags',
  assigneeIds: 'the assignees',
  blockedBy: 'what it waits for',
}

/**
 * The card's history (issue 32): what happened to it, newest first, from the server's
 * card_history (GET .../cards/:taskId/history), read again as the card changes.
 */
export function CardHistory({ taskId, version }: { taskId: string; version: string }) {
  const { org, members } = useWorkspace()
  const [events, setEvents] = useState<HistoryEvent[]>()
  const [next, setNext] = useState<string | null>(null)
  const [error, setError] = useState<string>()
  const [more, setMore] = useState(false)
  const extra = useRef<HistoryEvent[]>([])

  const load = useCallback(async () => {
    try {
      const page = await appApi.cardHistory(org.id, taskId)
      // Older pages already read stay below the fresh first page.
      const seen = new Set(page.events.map((e) => e.id))
      setEvents([...page.events, ...extra.current.filter((e) => !seen.has(e.id))])
      if (extra.current.length === 0) setNext(page.nextCursor)
      setError(undefined)
    } catch (e) {
      setError(describeError(e))
    }
  }, [org.id, taskId])

  useEffect(() => {
    // Read again whenever the card changes (its version), a moment after, once.
    void version
    const t = setTimeout(() => void load(), 300)
    return () => clearTimeout(t)
  }, [load, version])

  const loadMore = async () => {
    if (!next) return
    setMore(true)
    try {
      const page = await appApi.cardHistory(org.id, taskId, next)
      extra.current = [...extra.current, ...page.events]
      setEvents((now) => [...(now ?? []), ...page.events])
      setNext(page.nextCursor)
    } catch (e) {
      setError(describeError(e))
    } finally {
      setMore(false)
    }
  }

  const who = (e: HistoryEvent) => {
    switch (e.actor.kind) {
      case 'agent':
        return e.actor.name ?? 'An agent'
      case 'person':
        return e.actor.name ?? e.actor.email ?? 'Someone'
      default:
        return 'The board'
    }
  }

  return (
    <section className="panel-section" aria-labelledby="history-heading" data-testid="card-history">
      <h3 id="history-heading">History</h3>
      {error && <p className="field-error">{error}</p>}
      {!events && !error && <p className="muted small">Loading the history…</p>}
      <ol className="history">
        {events?.map((e) => (
          <li
            key={e.id ?? `now-${e.kind}`}
            className={`history-event history-${e.kind}`}
            data-kind={e.kind}
            data-actor-kind={e.actor.kind}
          >
            <span className="history-text">
              <strong className="history-actor">{holderOf(e) ?? who(e)}</strong>{' '}
              {describe(e, (id) => memberName(members.members, id))}
            </span>
            <time className="muted small" dateTime={e.at} title={new Date(e.at).toLocaleString()}>
              {relativeTime(e.at)}
            </time>
          </li>
        ))}
      </ol>
      {next && (
        <button
          type="button"
          className="btn btn-ghost btn-small"
          disabled={more}
          onClick={() => void loadMore()}
        >
          {more ? 'Loading…' : 'Show older'}
        </button>
      )}
    </section>
  )
}

const str = (v: unknown) => (typeof v === 'string' ? v : null)

/** Claims are told about their holder, whoever wrote them (the server, for a lapse). */
const CLAIM_KINDS = new Set(['claimed', 'released', 'lapsed', 'heartbeat-gap'])
function holderOf(e: HistoryEvent): string | undefined {
  return CLAIM_KINDS.has(e.kind) ? (str(e.detail.holder) ?? 'An agent') : undefined
}

function value(field: string, v: unknown, name: (id: string) => string, label?: unknown): string {
  if (v === null || v === undefined || (Array.isArray(v) && v.length === 0)) return 'none'
  switch (field) {
    case 'priority':
      return PRIORITY_LABELS[v as Priority] ?? String(v)
    case 'type':
      return TYPE_LABELS[v as TaskType] ?? String(v)
    case 'projectId':
      return str(label) ?? 'a project'
    case 'assigneeIds':
      return Array.isArray(v) ? v.map((id) => name(String(id))).join(', ') : String(v)
    case 'blockedBy':
      return Array.isArray(v) ? `${v.length} card${v.length === 1 ? '' : 's'}` : String(v)
    case 'tags':
      return Array.isArray(v) ? v.join(', ') : String(v)
    default:
      return `“${String(v)}”`
  }
}

/** What the event says, after who did it. */
function describe(e: HistoryEvent, name: (id: string) => string): string {
  const d = e.detail
  switch (e.kind) {
    case 'created':
      return `created the card${str(d.column) ? ` in ${d.column}` : ''}`
    case 'moved':
      return `moved it from ${str(d.from) ?? 'a column since deleted'} → ${str(d.to) ?? 'a column since deleted'}`
    case 'changed': {
      const field = String(d.field)
      return `changed ${FIELD_NAMES[field] ?? field}: ${value(field, d.from, name, d.fromName)} → ${value(field, d.to, name, d.toName)}`
    }
    case 'described':
      return d.typing === true ? 'edited the description' : 'rewrote the description'
    case 'claimed':
      return `claimed it${str(d.note) ? ` (“${d.note}”)` : ''}`
    case 'released':
      return 'released it'
    case 'force-released':
      return `force-released ${str(d.holder) ?? 'the agent'}’s claim`
    case 'lapsed':
      return 'let the claim lapse (no heartbeat in time)'
    case 'heartbeat-gap':
      return `was quiet for ${Math.round(Number(d.gapSeconds) / 60)} min of a ${Math.round(Number(d.leaseSeconds) / 60)} min lease`
    case 'archived':
      return 'archived it'
    case 'restored':
      return 'restored it to the board'
    case 'commented':
      return `commented: ${str(d.excerpt) ?? ''}`
    case 'screenshot':
      return `added a screenshot${str(d.filename) ? ` (${d.filename})` : ''}`
    default:
      return e.kind
  }
}
