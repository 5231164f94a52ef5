import { memo, useSyncExternalStore } from 'react'
import type { Priority, TaskType } from '../../../shared/constants.ts'
import { effectivePriority } from '../../../shared/priority.ts'
import type { ClaimRecord } from '../../../shared/records.ts'
import { Avatar } from '../ui/avatar.tsx'
import { BlockedIcon, BotIcon, CommentIcon, FlameIcon, ImageIcon } from '../ui/icons.tsx'
import { memberName, useWorkspace } from '../workspace.tsx'
import type { BoardStore } from './board-store.ts'
import type { DragStore } from './drag.ts'
import { type PresenceStore, usePresence } from './presence.ts'
import { useCard } from './use-board.ts'

export const TYPE_LABELS: Record<TaskType, string> = {
  bug: 'Bug',
  feature: 'Feature',
  improvement: 'Improvement',
  chore: 'Chore',
  question: 'Question',
  research: 'Research',
}

export const PRIORITY_LABELS: Record<Priority, string> = {
  urgent: 'Urgent',
  high: 'High',
  normal: 'Normal',
  low: 'Low',
}

export function PriorityBadge({
  own,
  onFire,
  compact,
}: {
  own: Priority | null
  onFire: boolean
  compact?: boolean
}) {
  const shown = effectivePriority(own, onFire)
  if (!shown) return compact ? null : <span className="badge badge-muted">Untriaged</span>
  const raised = onFire && shown !== own
  return (
    <span
      className={`badge priority priority-${shown}`}
      title={
        raised
          ? `Counts as ${shown}: the column is on fire (own level: ${own ?? 'untriaged'})`
          : undefined
      }
    >
      {raised ? <FlameIcon size={12} /> : <span className={`priority-dot priority-dot-${shown}`} />}
      {PRIORITY_LABELS[shown]}
      {raised && <span className="sr-only"> because the column is on fire</span>}
    </span>
  )
}

/**
 * The claim exactly as the specification labels the holder; a claim that no longer holds
 * the card says why: its holder released it, or its lease lapsed.
 */
export function ClaimLabel({ claim }: { claim: ClaimRecord }) {
  if (!claim.isLive) {
    const released = claim.status === 'released'
    const at = new Date(released ? (claim.releasedAt ?? claim.updatedAt) : claim.expiresAt)
    return (
      <span
        className="claim claim-lapsed"
        title={`${released ? 'Released by its holder' : 'Claim lapsed'} at ${at.toLocaleString()}; the card is free`}
      >
        <BotIcon size={12} />
        <span className="claim-holder">{claim.holder}</span>
        <span className="claim-state">{released ? 'released' : 'lapsed'}</span>
      </span>
    )
  }
  return (
    <span className="claim claim-live" title={claim.note ?? 'Working on this card'}>
      <BotIcon size={12} />
      <span className="sr-only">Claimed by </span>
      <span className="claim-holder">{claim.holder}</span>
    </span>
  )
}

interface CardProps {
  id: string
  store: BoardStore
  presence: PresenceStore
  drag: DragStore
  onFire: boolean
  onOpen: (id: string) => void
  onKeyDown: (e: React.KeyboardEvent<HTMLButtonElement>, id: string) => void
}

/** One card on the board; re-renders only when this card (or who is on it) changes. */
export const Card = memo(function Card({
  id,
  store,
  presence,
  drag,
  onFire,
  onOpen,
  onKeyDown,
}: CardProps) {
  const card = useCard(store, id)
  const members = useWorkspace().members.members
  const others = usePresence(presence, `card:${id}`, (p) => p.onCard(id))
  const dragging = useSyncExternalStore(drag.subscribe, () =>
    drag.state?.kind === 'card' && drag.state.id === id ? drag.state.via : null,
  )
  if (!card) return null
  const project = store.project(card.projectId)
  const mover = others?.find((p) => p.drag?.taskId === id)
  const shownTags = card.tags.slice(0, 3)
  const label = [
    card.title,
    card.blocked ? 'blocked: waits for a card not done yet' : null,
    card.claim?.isLive ? `claimed by ${card.claim.holder}` : null,
    mover ? `${mover.user.name} is moving it` : null,
  ]
    .filter(Boolean)
    .join(', ')
  return (
    <button
      type="button"
      className={`card${dragging ? ` card-dragging card-dragging-${dragging}` : ''}${
        card.claim?.isLive ? ' card-claimed' : ''
      }${card.blocked ? ' card-blocked' : ''}${mover ? ' card-peer-moving' : ''}`}
      style={mover ? ({ '--peer': mover.user.color } as React.CSSProperties) : undefined}
      data-card-id={id}
      data-blocked={card.blocked || undefined}
      aria-label={label}
      aria-describedby="card-instructions"
      aria-pressed={dragging === 'keyboard' ? true : undefined}
      onClick={() => onOpen(id)}
      onKeyDown={(e) => onKeyDown(e, id)}
    >
      {(card.type || effectivePriority(card.priority, onFire) || card.blocked) && (
        <span className="card-meta">
          {card.blocked && (
            <span className="badge badge-blocked" title="Waits for a card that is not done yet">
              <BlockedIcon size={11} />
              Blocked
            </span>
          )}
          {card.type && <span className={`type type-${card.type}`}>{TYPE_LABELS[card.type]}</span>}
          <PriorityBadge own={card.priority} onFire={onFire} compact />
        </span>
      )}
      <span className="card-title">{card.title || 'Untitled'}</span>
      {(project || shownTags.length > 0) && (
        <span className="card-tags">
          {project && (
            <span
              className="chip chip-project"
              style={{ '--chip': project.color } as React.CSSProperties}
            >
              {project.name}
            </span>
          )}
          {shownTags.map((t) => (
            <span key={t} className="chip">
              {t}
            </span>
          ))}
          {card.tags.length > shownTags.length && (
            <span className="chip chip-more">+{card.tags.length - shownTags.length}</span>
          )}
        </span>
      )}
      {(card.claim ||
        card.stats.commentCount > 0 ||
        card.stats.imageCount > 0 ||
        card.assigneeIds.length > 0) && (
        <span className="card-foot">
          {card.claim ? <ClaimLabel claim={card.claim} /> : <span />}
          <span className="card-counts">
            {card.stats.commentCount > 0 && (
              <span className="count" title={`${card.stats.commentCount} comments`}>
                <CommentIcon size={12} />
                {card.stats.commentCount}
                <span className="sr-only"> comments</span>
              </span>
            )}
            {card.stats.imageCount > 0 && (
              <span className="count" title={`${card.stats.imageCount} screenshots`}>
                <ImageIcon size={12} />
                {card.stats.imageCount}
                <span className="sr-only"> screenshots</span>
              </span>
            )}
            {card.assigneeIds.length > 0 && (
              <span className="assignees">
                {card.assigneeIds.slice(0, 3).map((a) => (
                  <Avatar key={a} id={a} name={memberName(members, a)} size={18} />
                ))}
              </span>
            )}
          </span>
        </span>
      )}
      {others && others.length > 0 && (
        <span className="card-peers" aria-hidden="true">
          {mover ? (
            <span className="peer-tag" style={{ background: mover.user.color }}>
              {mover.user.name} is moving
            </span>
          ) : (
            others.map((p) => (
              <Avatar
                key={p.user.id}
                id={p.user.id}
                name={p.user.name}
                color={p.user.color}
                size={16}
              />
            ))
          )}
        </span>
      )}
    </button>
  )
})
