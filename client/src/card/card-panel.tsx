import { useEffect, useId, useRef, useState } from 'react'
import { LIMITS, PRIORITIES, type Priority, TASK_TYPES } from '../../../shared/constants.ts'
import { effectivePriority } from '../../../shared/priority.ts'
import type { ClaimRecord } from '../../../shared/records.ts'
import { appApi } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import {
  archiveTask,
  descriptionText,
  moveTask,
  positionBetween,
  updateTask,
} from '../board/board-actions.ts'
import { ClaimLabel, PRIORITY_LABELS, TYPE_LABELS } from '../board/card.tsx'
import { type PresenceStore, usePresence } from '../board/presence.ts'
import { useCard, useColumns, useProjects, useTags } from '../board/use-board.ts'
import { useDocStatus } from '../live/use-live.ts'
import { useYTextarea } from '../live/use-ytext.ts'
import { Avatar } from '../ui/avatar.tsx'
import { ArchiveIcon, CloseIcon, LinkIcon, LockIcon, MoreIcon, TrashIcon } from '../ui/icons.tsx'
import { Menu } from '../ui/menu.tsx'
import { confirmDialog } from '../ui/modal.tsx'
import { toast } from '../ui/toast.tsx'
import { memberName, useWorkspace } from '../workspace.tsx'
import { Screenshots } from './attachments.tsx'
import { type CardStore, useCardStore } from './card-store.ts'
import { Comments, ROBOT_EMAIL, relativeTime } from './comments.tsx'
import { TagsInput } from './tags-input.tsx'

/** The card, opened beside the board: every field, live, with the claim and the thread. */
export default function CardPanel({
  taskId,
  presence,
  onClose,
}: {
  taskId: string
  presence: PresenceStore
  onClose: () => void
}) {
  const { store, board } = useWorkspace()
  const card = useCard(store, taskId)
  const cardDoc = useCardStore(taskId)
  const status = useDocStatus(board)
  const panel = useRef<HTMLElement>(null)
  const opener = useRef<Element | null>(null)

  useEffect(() => {
    opener.current = document.activeElement
    // Focus moves into the panel (announced by its label), not into a field that would
    // take the next keystroke as an edit.
    panel.current?.focus()
    return () => {
      // Back to the card that opened the panel, if it is still on the board.
      const back = opener.current
      if (back instanceof HTMLElement && back.isConnected) back.focus()
    }
  }, [])

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || e.defaultPrevented) return
      if (document.querySelector('dialog[open]')) return
      onClose()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [onClose])

  return (
    <aside
      ref={panel}
      className="card-panel"
      aria-label="Card details"
      data-testid="card-panel"
      tabIndex={-1}
    >
      {card ? (
        <PanelBody
          key={taskId}
          taskId={taskId}
          cardDoc={cardDoc}
          presence={presence}
          onClose={onClose}
        />
      ) : (
        <div className="panel-missing">
          <button
            type="button"
            className="icon-btn panel-close"
            aria-label="Close card"
            onClick={onClose}
          >
            <CloseIcon />
          </button>
          <p>
            {status.loaded || status.synced
              ? 'This card is not on the board: it was archived or deleted. Archived cards are listed under “Archived” and can be restored from there.'
              : 'Loading the card…'}
          </p>
        </div>
      )}
    </aside>
  )
}

function PanelBody({
  taskId,
  cardDoc,
  presence,
  onClose,
}: {
  taskId: string
  /** The card's own document (comments, screenshots), once open. */
  cardDoc: CardStore | undefined
  presence: PresenceStore
  onClose: () => void
}) {
  const ws = useWorkspace()
  const { store, org, canAdmin, members, unapplied } = ws
  const card = useCard(store, taskId)
  const columns = useColumns(store)
  const projects = useProjects(store)
  const allTags = useTags(store)
  const viewers = usePresence(presence, `card:${taskId}`, (p) => p.onCard(taskId))
  const titleId = useId()
  const description = useRef<HTMLTextAreaElement>(null)
  const [text] = useState(() => descriptionText(store.doc, taskId))
  useYTextarea(text, description, LIMITS.taskDescription.max)
  const [title, setTitle] = useState(card?.title ?? '')
  const [editingTitle, setEditingTitle] = useState(false)
  useEffect(() => {
    if (!editingTitle && card) setTitle(card.title)
  }, [card, editingTitle])

  if (!card) return null
  const column = store.column(card.columnId)
  const onFire = column?.onFire === true
  const locked = card.claim?.isLive === true
  const effective = effectivePriority(card.priority, onFire)

  const saveTitle = () => {
    setEditingTitle(false)
    const t = title.trim()
    if (t && t !== card.title) updateTask(store.doc, taskId, { title: t })
    else setTitle(card.title)
  }

  const run = async (what: () => Promise<unknown>, done?: string) => {
    try {
      await what()
      if (done) toast('success', done)
    } catch (e) {
      toast('error', describeError(e))
    }
  }

  const deleteCard = async () => {
    const ok = await confirmDialog({
      title: 'Delete this card?',
      message: `“${card.title}” is deleted with its comments, screenshots and claim. This cannot be undone.`,
      confirmLabel: 'Delete card',
      danger: true,
    })
    if (!ok) return
    await run(async () => {
      unapplied.forget(taskId)
      await appApi.deleteTask(org.id, taskId)
      onClose()
    }, 'Card deleted')
  }

  const forceRelease = async (claim: ClaimRecord) => {
    const ok = await confirmDialog({
      title: 'Force release the claim?',
      message: `${claim.holder} loses the card at once. Its next heartbeat or release is refused. Use this for an agent that died holding the card.`,
      confirmLabel: 'Force release',
      danger: true,
    })
    if (!ok) return
    await run(() => appApi.forceRelease(org.id, taskId), 'Claim released')
  }

  const moveTo = (columnId: string) => {
    const ids = store.cardsOf(columnId).ids.filter((id) => id !== taskId)
    const last = ids.length > 0 ? store.card(ids[ids.length - 1] as string) : undefined
    moveTask(store.doc, taskId, columnId, positionBetween(last?.position, undefined))
  }

  const others = (viewers ?? []).filter((v) => v.user.id !== ws.user.id)

  return (
    <div className="panel-scroll">
      <header className="panel-header">
        <span className="panel-crumb">{column?.title ?? 'No column'}</span>
        {others.length > 0 && (
          <span
            className="panel-viewers"
            title={`Also here: ${others.map((o) => o.user.name).join(', ')}`}
          >
            {others.map((o) => (
              <Avatar
                key={o.user.id}
                id={o.user.id}
                name={o.user.name}
                color={o.user.color}
                size={22}
              />
            ))}
          </span>
        )}
        <span className="header-spacer" />
        <Menu
          label="Card actions"
          trigger={<MoreIcon />}
          align="end"
          items={[
            {
              label: 'Copy link',
              icon: <LinkIcon size={14} />,
              onSelect: () => {
                void navigator.clipboard
                  ?.writeText(`${location.origin}/o/${org.id}/board?card=${taskId}`)
                  .then(() => toast('success', 'Link copied'))
              },
            },
            {
              label: 'Archive',
              icon: <ArchiveIcon size={14} />,
              disabled: locked,
              onSelect: () => {
                archiveTask(store.doc, taskId)
                toast('success', 'Card archived', {
                  label: 'Undo',
                  run: () =>
                    void appApi
                      .restoreTask(org.id, taskId)
                      .catch((e: unknown) => toast('error', describeError(e))),
                })
                onClose()
              },
            },
            {
              label: 'Delete card…',
              icon: <TrashIcon size={14} />,
              danger: true,
              onSelect: () => void deleteCard(),
            },
          ]}
        />
        <button type="button" className="icon-btn" aria-label="Close card" onClick={onClose}>
          <CloseIcon />
        </button>
      </header>

      {card.claim && (
        <ClaimDetails
          claim={card.claim}
          canRelease={canAdmin}
          onRelease={() => void forceRelease(card.claim as ClaimRecord)}
        />
      )}

      <label htmlFor={titleId} className="sr-only">
        Title
      </label>
      <textarea
        id={titleId}
        className="panel-title"
        value={title}
        rows={1}
        maxLength={LIMITS.taskTitle.max}
        readOnly={locked}
        onFocus={() => setEditingTitle(true)}
        onChange={(e) => setTitle(e.target.value.replace(/\n/g, ' '))}
        onBlur={saveTitle}
        onKeyDown={(e) => {
          if (e.key === 'Enter') {
            e.preventDefault()
            e.currentTarget.blur()
          }
          if (e.key === 'Escape') {
            e.preventDefault()
            setTitle(card.title)
            setEditingTitle(false)
            e.currentTarget.blur()
          }
        }}
      />

      <dl className="props">
        <dt>Column</dt>
        <dd>
          <select
            aria-label="Column"
            value={card.columnId}
            disabled={locked}
            onChange={(e) => moveTo(e.target.value)}
          >
            {columns.map((c) => (
              <option key={c.id} value={c.id}>
                {c.title}
              </option>
            ))}
          </select>
        </dd>
        <dt>Type</dt>
        <dd>
          <OptionalSelect
            label="Type"
            value={card.type}
            none="No type"
            options={TASK_TYPES}
            labels={TYPE_LABELS}
            disabled={locked}
            onChange={(type) => updateTask(store.doc, taskId, { type })}
          />
        </dd>
        <dt>Priority</dt>
        <dd>
          <OptionalSelect
            label="Priority"
            value={card.priority}
            none="Untriaged"
            options={PRIORITIES}
            labels={PRIORITY_LABELS}
            disabled={locked}
            onChange={(priority) => updateTask(store.doc, taskId, { priority })}
          />
          {onFire && effective !== card.priority && (
            <span className="field-hint">
              Counts as {PRIORITY_LABELS[effective as Priority].toLowerCase()} while “
              {column?.title}” is on fire.
            </span>
          )}
        </dd>
        <dt>Project</dt>
        <dd className="prop-row">
          <select
            aria-label="Project"
            value={card.projectId ?? ''}
            disabled={locked}
            onChange={(e) => {
              if (e.target.value) updateTask(store.doc, taskId, { projectId: e.target.value })
            }}
          >
            {!card.projectId && <option value="">No project</option>}
            {projects.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
          {card.projectId && (
            <button
              type="button"
              className="btn btn-ghost btn-small"
              onClick={() =>
                void run(() => appApi.removeTaskProject(org.id, taskId), 'Project removed')
              }
            >
              Remove project
            </button>
          )}
        </dd>
        <dt>Assignees</dt>
        <dd>
          <Assignees
            selected={card.assigneeIds}
            disabled={locked}
            onChange={(ids) => updateTask(store.doc, taskId, { assigneeIds: ids })}
            names={(id) => memberName(members.members, id)}
          />
        </dd>
        <dt>Tags</dt>
        <dd>
          <TagsInput
            tags={card.tags}
            suggestions={allTags}
            disabled={locked}
            onChange={(tags) => updateTask(store.doc, taskId, { tags })}
          />
        </dd>
      </dl>

      <section className="panel-section">
        <h3>
          <label htmlFor={`${titleId}-desc`}>Description</label>
        </h3>
        <textarea
          id={`${titleId}-desc`}
          ref={description}
          className="description"
          placeholder={locked ? 'No description' : 'Add a description… (edited together, live)'}
          readOnly={locked}
          maxLength={LIMITS.taskDescription.max}
        />
      </section>

      {cardDoc ? (
        <>
          <Screenshots card={cardDoc} />
          <Comments card={cardDoc} />
        </>
      ) : (
        <p className="muted">Loading comments…</p>
      )}

      <footer className="panel-foot muted small">
        Created {relativeTime(card.createdAt)}
        {card.createdByEmail && ` by ${authorOf(card.createdByEmail, members.members)}`} · updated{' '}
        {relativeTime(card.updatedAt)}
      </footer>
    </div>
  )
}

/** Who created a card, for the eye: a member by name, an API key's robot as an agent. */
/** A select of one of `options`, or none of them (null). */
function OptionalSelect<T extends string>(props: {
  label: string
  value: T | null
  none: string
  options: readonly T[]
  labels: Record<T, string>
  disabled: boolean
  onChange: (value: T | null) => void
}) {
  return (
    <select
      aria-label={props.label}
      value={props.value ?? ''}
      disabled={props.disabled}
      onChange={(e) => props.onChange((e.target.value || null) as T | null)}
    >
      <option value="">{props.none}</option>
      {props.options.map((o) => (
        <option key={o} value={o}>
          {props.labels[o]}
        </option>
      ))}
    </select>
  )
}

function authorOf(email: string, members: readonly { email: string; name: string }[]): string {
  if (ROBOT_EMAIL.test(email)) return 'an agent (API key)'
  return members.find((m) => m.email === email)?.name ?? email
}

function ClaimDetails({
  claim,
  canRelease,
  onRelease,
}: {
  claim: ClaimRecord
  canRelease: boolean
  onRelease: () => void
}) {
  const when = (iso: string) => new Date(iso).toLocaleString()
  const released = claim.status === 'released'
  const endLabel = claim.isLive ? 'Lease ends' : released ? 'Released at' : 'Lapsed at'
  const endedAt = released ? (claim.releasedAt ?? claim.updatedAt) : claim.expiresAt
  return (
    <section
      className={`claim-box ${claim.isLive ? 'claim-box-live' : 'claim-box-lapsed'}`}
      aria-label="Claim"
      data-testid="claim-details"
    >
      <div className="claim-box-head">
        {claim.isLive ? <LockIcon size={14} /> : null}
        <ClaimLabel claim={claim} />
        <span className="muted small">
          {claim.isLive
            ? 'is working on this card'
            : released
              ? 'released the card; it is free'
              : 'claim lapsed; the card is free'}
        </span>
      </div>
      {claim.note && <p className="claim-note">“{claim.note}”</p>}
      <dl className="claim-facts">
        <dt>Started</dt>
        <dd>{when(claim.startedAt)}</dd>
        <dt>Last heartbeat</dt>
        <dd>{when(claim.updatedAt)}</dd>
        <dt>{endLabel}</dt>
        <dd>{when(endedAt)}</dd>
      </dl>
      {claim.isLive && (
        <p className="small">
          While the claim is live nobody else can change the card; comments still work.
          {canRelease ? '' : ' An owner or admin can force release it.'}
        </p>
      )}
      {canRelease && claim.isLive && (
        <button type="button" className="btn btn-danger btn-small" onClick={onRelease}>
          Force release
        </button>
      )}
    </section>
  )
}

function Assignees({
  selected,
  disabled,
  onChange,
  names,
}: {
  selected: readonly string[]
  disabled: boolean
  onChange: (ids: string[]) => void
  names: (id: string) => string
}) {
  const { members } = useWorkspace().members
  const [open, setOpen] = useState(false)
  const wrap = useRef<HTMLDivElement>(null)
  useEffect(() => {
    if (!open) return
    const outside = (e: PointerEvent) => {
      if (!wrap.current?.contains(e.target as Node)) setOpen(false)
    }
    document.addEventListener('pointerdown', outside)
    return () => document.removeEventListener('pointerdown', outside)
  }, [open])
  const toggle = (id: string) =>
    onChange(selected.includes(id) ? selected.filter((x) => x !== id) : [...selected, id])
  return (
    <div className="assignee-picker" ref={wrap}>
      <button
        type="button"
        className="assignee-button"
        disabled={disabled}
        aria-expanded={open}
        onClick={() => setOpen((o) => !o)}
      >
        {selected.length === 0 ? (
          <span className="muted">Nobody</span>
        ) : (
          selected.map((id) => (
            <span key={id} className="assignee-chip">
              <Avatar id={id} name={names(id)} size={18} />
              {names(id)}
            </span>
          ))
        )}
      </button>
      {open && (
        <fieldset
          className="popover"
          onKeyDown={(e) => {
            if (e.key === 'Escape') {
              e.preventDefault()
              setOpen(false)
            }
          }}
        >
          <legend className="sr-only">Assign people</legend>
          {members.map((m) => (
            <label key={m.id} className="check">
              <input
                type="checkbox"
                checked={selected.includes(m.id)}
                onChange={() => toggle(m.id)}
              />
              <Avatar id={m.id} name={m.name} size={18} />
              <span>{m.name}</span>
            </label>
          ))}
          {members.length === 0 && <p className="muted small">Members load when you are online.</p>}
        </fieldset>
      )}
    </div>
  )
}
