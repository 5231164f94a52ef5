import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from 'react'
import { COLUMN_ROLES, type ColumnRole, LIMITS, PRIORITIES } from '../../../shared/constants.ts'
import { effectivePriority } from '../../../shared/priority.ts'
import type { Column } from '../../../shared/records.ts'
import { type ArchivedTask, appApi } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { setQuery, useQueryParam } from '../router.tsx'
import { Avatar } from '../ui/avatar.tsx'
import { ArchiveIcon, PlusIcon } from '../ui/icons.tsx'
import { Labeled } from '../ui/labeled.tsx'
import { confirmDialog, Modal } from '../ui/modal.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { createColumn, createTask, moveColumn, moveTask, planDrop } from './board-actions.ts'
import { PRIORITY_LABELS } from './card.tsx'
import type { HeightCache } from './card-list.tsx'
import { BoardColumn, type CardFilter, type ColumnActions, ROLE_LABELS } from './column.tsx'
import { attachPointerDrag, type DragState, DragStore, ListRegistry } from './drag.ts'
import { PresenceStore, usePresence } from './presence.ts'
import { useBoard, useColumns, useProjects, useTags } from './use-board.ts'

const CardPanel = lazy(() => import('../card/card-panel.tsx'))

/** The live board: filters, presence, columns of cards, drag and drop, and the card panel. */
export function BoardPage() {
  const ws = useWorkspace()
  const { store, board, org, user } = ws
  const presence = useMemo(() => new PresenceStore(board), [board])
  useEffect(() => () => presence.destroy(), [presence])
  const drag = useMemo(() => new DragStore(), [])
  const lists = useMemo(() => new ListRegistry(), [])
  const heights = useMemo<HeightCache>(() => new Map(), [])
  const pendingFocus = useRef<string | null>(null)
  const visibleIds = useRef(new Map<string, readonly string[]>())
  const [announcement, setAnnouncement] = useState('')

  const columns = useColumns(store)
  const projects = useProjects(store)
  const tags = useTags(store)
  const projectFilter = useQueryParam('project')
  const tagFilter = useQueryParam('tag')
  const priorityFilter = useQueryParam('priority')
  const openCard = useQueryParam('card')
  const layout = useBoard(store, projectFilter ? 'layout' : 'none', (s) => s.layout())

  useEffect(() => {
    presence.setMine('openCard', openCard)
  }, [presence, openCard])

  const shownColumns = useMemo(() => {
    void layout
    if (!projectFilter) return columns
    const own = columns.filter((c) => c.projectId === projectFilter)
    const base = new Set(
      (own.length > 0 ? own : columns.filter((c) => c.projectId === null)).map((c) => c.id),
    )
    // A column holding one of the project's cards shows too (as get_board does).
    for (const card of store.allCards()) {
      if (card.projectId === projectFilter && !card.archivedAt) base.add(card.columnId)
    }
    return columns.filter((c) => base.has(c.id))
  }, [columns, projectFilter, layout, store])

  const filter = useMemo<CardFilter | null>(() => {
    if (!projectFilter && !tagFilter && !priorityFilter) return null
    const tag = tagFilter?.toLowerCase()
    return (card, column) => {
      if (projectFilter && card.projectId !== projectFilter) return false
      if (tag && !card.tags.some((t) => t.toLowerCase() === tag)) return false
      if (priorityFilter) {
        const p = effectivePriority(card.priority, column.onFire)
        if (priorityFilter === 'none' ? p !== null : p !== priorityFilter) return false
      }
      return true
    }
  }, [projectFilter, tagFilter, priorityFilter])
  const filterKey = `${projectFilter}|${tagFilter}|${priorityFilter}`

  // Tell the others where a card being dragged would land; nothing is written until the drop.
  useEffect(
    () =>
      drag.subscribe(() => {
        const s = drag.state
        presence.setMine(
          'drag',
          s?.kind === 'card' && s.overColumn
            ? { taskId: s.id, columnId: s.overColumn, index: s.index }
            : null,
        )
      }),
    [drag, presence],
  )

  const shownRef = useRef(shownColumns)
  shownRef.current = shownColumns

  const commitDrop = useCallback(
    (s: DragState) => {
      if (s.kind === 'column') {
        // The index is among the columns shown; positions are board-wide.
        const shown = shownRef.current.filter((c) => c.id !== s.id)
        const all = store.columns().filter((c) => c.id !== s.id)
        const anchor = shown[s.index]
        const last = shown.at(-1)
        const at = anchor
          ? all.findIndex((c) => c.id === anchor.id)
          : last
            ? all.findIndex((c) => c.id === last.id) + 1
            : all.length
        moveColumn(store, s.id, at)
        return
      }
      const card = store.card(s.id)
      if (!card || !s.overColumn) return
      if (card.claim?.isLive) {
        toast(
          'error',
          `“${card.title}” is claimed by ${card.claim.holder}, so it cannot be moved until the claim is released.`,
        )
        return
      }
      const shown = visibleIds.current.get(s.overColumn) ?? store.cardsOf(s.overColumn).ids
      const position = planDrop(store, s.overColumn, shown, s.index, s.id)
      if (position !== undefined) moveTask(store.doc, s.id, s.overColumn, position)
    },
    [store],
  )

  const boardRef = useRef<HTMLDivElement>(null)
  const scrollerRef = useRef<HTMLDivElement>(null)
  useEffect(() => {
    if (!boardRef.current || !scrollerRef.current) return
    return attachPointerDrag({
      board: boardRef.current,
      scroller: scrollerRef.current,
      drag,
      lists,
      columnOrder: () => shownRef.current.map((c) => c.id),
      onDrop: commitDrop,
    })
  }, [drag, lists, commitDrop])

  const focusCard = useCallback(
    (id: string, columnId: string) => {
      pendingFocus.current = id
      lists.get(columnId)?.reveal(id)
      const el = document.querySelector<HTMLElement>(
        `[data-column-id="${columnId}"] [data-card-id="${id}"]`,
      )
      if (el) {
        pendingFocus.current = null
        el.focus()
      }
    },
    [lists],
  )

  const describeSpot = useCallback(
    (columnId: string, index: number, movingId: string) => {
      const col = store.column(columnId)
      const count = (visibleIds.current.get(columnId) ?? []).filter((id) => id !== movingId).length
      return `${col?.title ?? 'column'}, position ${index + 1} of ${count + 1}`
    },
    [store],
  )

  const onCardKeyDown = useCallback(
    (e: React.KeyboardEvent<HTMLButtonElement>, id: string) => {
      const card = store.card(id)
      if (!card) return
      const order = shownRef.current.map((c) => c.id)
      const s = drag.state
      if (s?.via === 'keyboard' && s.id === id && s.overColumn) {
        const others = (col: string) => (visibleIds.current.get(col) ?? []).filter((x) => x !== id)
        let next: DragState | null = s
        switch (e.key) {
          case 'ArrowUp':
            next = { ...s, index: Math.max(0, s.index - 1) }
            break
          case 'ArrowDown':
            next = { ...s, index: Math.min(others(s.overColumn).length, s.index + 1) }
            break
          case 'ArrowLeft':
          case 'ArrowRight': {
            const at = order.indexOf(s.overColumn) + (e.key === 'ArrowLeft' ? -1 : 1)
            const col = order[at]
            if (col) next = { ...s, overColumn: col, index: Math.min(s.index, others(col).length) }
            break
          }
          case ' ':
          case 'Enter':
            drag.set(null)
            commitDrop(s)
            setAnnouncement(
              `Dropped “${card.title}” in ${describeSpot(s.overColumn, s.index, id)}.`,
            )
            pendingFocus.current = id
            break
          case 'Escape':
            drag.set(null)
            setAnnouncement(`Move cancelled; “${card.title}” stays where it was.`)
            break
          case 'Tab':
            drag.set(null)
            return
          default:
            return
        }
        e.preventDefault()
        e.stopPropagation()
        if (next && next !== s && drag.state) {
          drag.set(next)
          if (next.overColumn) {
            lists.get(next.overColumn)?.reveal(id)
            setAnnouncement(describeSpot(next.overColumn, next.index, id))
          }
        }
        return
      }
      switch (e.key) {
        case ' ': {
          e.preventDefault()
          const shown = visibleIds.current.get(card.columnId) ?? []
          const index = Math.max(0, shown.indexOf(id))
          drag.set({ kind: 'card', id, via: 'keyboard', overColumn: card.columnId, index })
          setAnnouncement(
            `Picked up “${card.title}”. Arrow keys move it, Space drops it, Escape cancels.`,
          )
          break
        }
        case 'ArrowUp':
        case 'ArrowDown': {
          e.preventDefault()
          const shown = visibleIds.current.get(card.columnId) ?? []
          const target = shown[shown.indexOf(id) + (e.key === 'ArrowUp' ? -1 : 1)]
          if (target) focusCard(target, card.columnId)
          break
        }
        case 'ArrowLeft':
        case 'ArrowRight': {
          e.preventDefault()
          const shown = visibleIds.current.get(card.columnId) ?? []
          const index = shown.indexOf(id)
          let at = order.indexOf(card.columnId)
          for (;;) {
            at += e.key === 'ArrowLeft' ? -1 : 1
            const col = order[at]
            if (!col) break
            const list = visibleIds.current.get(col) ?? []
            const target = list[Math.min(index, list.length - 1)]
            if (target) {
              focusCard(target, col)
              break
            }
          }
          break
        }
        default:
          break
      }
    },
    [store, drag, lists, commitDrop, describeSpot, focusCard],
  )

  const [settingsFor, setSettingsFor] = useState<Column>()
  const [deleting, setDeleting] = useState<Column>()
  const [showArchived, setShowArchived] = useState(false)

  const actions = useMemo<ColumnActions>(
    () => ({
      onOpen: (id) => setQuery({ card: id }, { replace: false }),
      onCardKeyDown,
      onAddCard: (columnId, title) => {
        const column = store.column(columnId)
        createTask(store, {
          columnId,
          projectId: projectFilter ?? column?.projectId ?? null,
          title,
          email: user.email,
        })
      },
      onToggleFire: async (column) => {
        try {
          await appApi.patchColumn(org.id, column.id, { onFire: !column.onFire })
        } catch (e) {
          toast('error', describeError(e))
        }
      },
      onSettings: setSettingsFor,
      onDelete: setDeleting,
      onMove: (column, by) => {
        const shown = shownRef.current
        const neighbour = shown[shown.findIndex((c) => c.id === column.id) + by]
        if (!neighbour) return
        // Positions are board-wide; place next to the neighbour shown on this board.
        const all = store.columns().filter((c) => c.id !== column.id)
        const at = all.findIndex((c) => c.id === neighbour.id)
        moveColumn(store, column.id, by > 0 ? at + 1 : at)
      },
    }),
    [store, org.id, user.email, projectFilter, onCardKeyDown],
  )

  const projectName = (c: Column) =>
    c.projectId ? (store.project(c.projectId)?.name ?? null) : null

  return (
    <div className="board-page">
      <header className="page-header">
        <h1 className="page-title">Board</h1>
        <fieldset className="filters">
          <legend className="sr-only">Filters</legend>
          <label className="select-wrap">
            <span className="sr-only">Project</span>
            <select
              value={projectFilter ?? ''}
              onChange={(e) => setQuery({ project: e.target.value || null })}
              aria-label="Filter by project"
            >
              <option value="">All projects</option>
              {projects.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </label>
          <label className="select-wrap">
            <span className="sr-only">Tag</span>
            <select
              value={tagFilter ?? ''}
              onChange={(e) => setQuery({ tag: e.target.value || null })}
              aria-label="Filter by tag"
            >
              <option value="">All tags</option>
              {tags.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
              {tagFilter && !tags.some((t) => t.toLowerCase() === tagFilter.toLowerCase()) && (
                <option value={tagFilter}>{tagFilter}</option>
              )}
            </select>
          </label>
          <label className="select-wrap">
            <span className="sr-only">Priority</span>
            <select
              value={priorityFilter ?? ''}
              onChange={(e) => setQuery({ priority: e.target.value || null })}
              aria-label="Filter by priority"
            >
              <option value="">Any priority</option>
              {PRIORITIES.map((p) => (
                <option key={p} value={p}>
                  {PRIORITY_LABELS[p]}
                </option>
              ))}
              <option value="none">Untriaged</option>
            </select>
          </label>
          {filter && (
            <button
              type="button"
              className="btn btn-ghost btn-small"
              onClick={() => setQuery({ project: null, tag: null, priority: null })}
            >
              Clear filters
            </button>
          )}
        </fieldset>
        <span className="header-spacer" />
        <PresenceBar presence={presence} />
        <button type="button" className="btn btn-ghost" onClick={() => setShowArchived(true)}>
          <ArchiveIcon size={15} /> Archived
        </button>
        <AddColumnButton
          onAdd={(title) => createColumn(store, { title, projectId: projectFilter })}
        />
      </header>
      <p id="card-instructions" className="sr-only">
        Enter opens the card. Space picks it up to move it with the arrow keys; Space again drops it
        and Escape cancels. Arrow keys alone move between cards.
      </p>
      <div className="sr-only" aria-live="assertive">
        {announcement}
      </div>
      <div className="board-scroller" ref={scrollerRef}>
        <div className="board" ref={boardRef} data-testid="board">
          {shownColumns.map((column, i) => (
            <BoardColumn
              key={column.id}
              column={column}
              visibleRecord={visibleIds.current}
              store={store}
              presence={presence}
              drag={drag}
              lists={lists}
              heights={heights}
              filter={filter}
              filterKey={filterKey}
              projectName={projectFilter ? null : projectName(column)}
              actions={actions}
              pendingFocus={pendingFocus}
              isFirst={i === 0}
              isLast={i === shownColumns.length - 1}
            />
          ))}
          <ColumnDropIndicator drag={drag} columns={shownColumns} />
          {shownColumns.length === 0 && (
            <div className="board-empty">
              <p>No columns yet. Add one to start the board.</p>
            </div>
          )}
        </div>
      </div>
      {settingsFor && (
        <ColumnSettings column={settingsFor} onClose={() => setSettingsFor(undefined)} />
      )}
      {deleting && <DeleteColumn column={deleting} onClose={() => setDeleting(undefined)} />}
      <ArchivedCards open={showArchived} onClose={() => setShowArchived(false)} />
      {openCard && (
        <Suspense fallback={null}>
          <CardPanel
            taskId={openCard}
            presence={presence}
            onClose={() => setQuery({ card: null })}
          />
        </Suspense>
      )}
    </div>
  )
}

function ColumnDropIndicator({ drag, columns }: { drag: DragStore; columns: readonly Column[] }) {
  const [state, setState] = useState<DragState | null>(null)
  useEffect(
    () => drag.subscribe(() => setState(drag.state?.kind === 'column' ? drag.state : null)),
    [drag],
  )
  if (!state) return null
  const others = columns.filter((c) => c.id !== state.id)
  const anchor = others[state.index]
  const el = anchor
    ? document.querySelector<HTMLElement>(`[data-column-id="${anchor.id}"]`)
    : document.querySelector<HTMLElement>(`[data-column-id="${others.at(-1)?.id}"]`)
  if (!el) return null
  const left = anchor ? el.offsetLeft - 7 : el.offsetLeft + el.offsetWidth + 5
  return <div className="column-drop-indicator" style={{ left }} />
}

function PresenceBar({ presence }: { presence: PresenceStore }) {
  const people = usePresence(presence, 'people', (p) => p.everyone())
  const { store } = useWorkspace()
  const unique = [...new Map(people.map((p) => [p.user.id, p])).values()]
  if (unique.length === 0) return null
  return (
    <ul className="presence" aria-label="Also on this board">
      {unique.slice(0, 6).map((p) => {
        const card = p.openCard ? store.card(p.openCard) : undefined
        const doing = card
          ? `${p.user.name}, viewing “${card.title}”`
          : `${p.user.name}, on the board`
        return (
          <li key={p.user.id} className="presence-item">
            <Avatar
              id={p.user.id}
              name={p.user.name}
              color={p.user.color}
              size={26}
              title={doing}
            />
          </li>
        )
      })}
      {unique.length > 6 && <li className="presence-item presence-more">+{unique.length - 6}</li>}
    </ul>
  )
}

function AddColumnButton({ onAdd }: { onAdd: (title: string) => void }) {
  const [open, setOpen] = useState(false)
  const [title, setTitle] = useState('')
  return (
    <>
      <button type="button" className="btn btn-primary" onClick={() => setOpen(true)}>
        <PlusIcon size={15} /> Column
      </button>
      <Modal open={open} onClose={() => setOpen(false)} title="New column">
        <form
          className="form"
          onSubmit={(e) => {
            e.preventDefault()
            if (!title.trim()) return
            onAdd(title.trim())
            setTitle('')
            setOpen(false)
          }}
        >
          <Labeled label="Title">
            {(p) => (
              <input
                {...p}
                value={title}
                maxLength={LIMITS.columnTitle.max}
                onChange={(e) => setTitle(e.target.value)}
                required
                // biome-ignore lint/a11y/noAutofocus: the dialog exists to type this title
                autoFocus
              />
            )}
          </Labeled>
          <div className="modal-actions">
            <button type="button" className="btn" onClick={() => setOpen(false)}>
              Cancel
            </button>
            <button type="submit" className="btn btn-primary" disabled={!title.trim()}>
              Add column
            </button>
          </div>
        </form>
      </Modal>
    </>
  )
}

function ColumnSettings({ column, onClose }: { column: Column; onClose: () => void }) {
  const { org } = useWorkspace()
  const [role, setRole] = useState<ColumnRole | ''>(column.role ?? '')
  const [onFire, setOnFire] = useState(column.onFire)
  const [busy, setBusy] = useState(false)
  const save = async () => {
    setBusy(true)
    try {
      await appApi.patchColumn(org.id, column.id, { role: role || null, onFire })
      onClose()
    } catch (e) {
      toast('error', describeError(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <Modal open onClose={onClose} title={`Column “${column.title}”`}>
      <form
        className="form"
        onSubmit={(e) => {
          e.preventDefault()
          void save()
        }}
      >
        <Labeled label="Role" hint="Agents read the role to know what the column means.">
          {(p) => (
            <select
              {...p}
              value={role}
              onChange={(e) => setRole(e.target.value as ColumnRole | '')}
            >
              <option value="">No role</option>
              {COLUMN_ROLES.map((r) => (
                <option key={r} value={r}>
                  {ROLE_LABELS[r]}
                </option>
              ))}
            </select>
          )}
        </Labeled>
        <label className="check">
          <input type="checkbox" checked={onFire} onChange={(e) => setOnFire(e.target.checked)} />
          <span>On fire: every card in it counts as at least high priority</span>
        </label>
        <div className="modal-actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={busy}>
            Save
          </button>
        </div>
      </form>
    </Modal>
  )
}

function DeleteColumn({ column, onClose }: { column: Column; onClose: () => void }) {
  const { org, store } = useWorkspace()
  const held = [...store.allCards()].filter((c) => c.columnId === column.id)
  const others = store.columns().filter((c) => c.id !== column.id)
  const [dest, setDest] = useState(others[0]?.id ?? '')
  const [busy, setBusy] = useState(false)
  const remove = async () => {
    setBusy(true)
    try {
      // Archived cards of the column move too (they are not on the board to count here).
      const { movedCount } = await appApi.deleteColumn(org.id, column.id, dest || undefined)
      toast(
        'success',
        movedCount > 0
          ? `Deleted “${column.title}”; ${movedCount} card${movedCount === 1 ? '' : 's'} moved.`
          : `Deleted “${column.title}”.`,
      )
      onClose()
    } catch (e) {
      toast('error', describeError(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <Modal open onClose={onClose} title={`Delete “${column.title}”?`}>
      <form
        className="form"
        onSubmit={(e) => {
          e.preventDefault()
          void remove()
        }}
      >
        {held.length === 0 ? (
          <p>The column is empty. Deleting it cannot be undone.</p>
        ) : (
          <>
            <p>
              It holds {held.length} card{held.length === 1 ? '' : 's'}. They move to the bottom of
              another column, in their order, with the column's archived cards.
            </p>
            <Labeled label="Move the cards to">
              {(p) => (
                <select {...p} value={dest} onChange={(e) => setDest(e.target.value)} required>
                  {others.map((c) => (
                    <option key={c.id} value={c.id}>
                      {c.title}
                    </option>
                  ))}
                </select>
              )}
            </Labeled>
          </>
        )}
        <div className="modal-actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button
            type="submit"
            className="btn btn-danger"
            disabled={busy || (held.length > 0 && !dest)}
          >
            Delete column
          </button>
        </div>
      </form>
    </Modal>
  )
}

/**
 * Archived cards, newest archive first, a page at a time from the app API (they are not
 * in the board document): each can be restored to the board or deleted for good.
 */
function ArchivedCards({ open, onClose }: { open: boolean; onClose: () => void }) {
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
