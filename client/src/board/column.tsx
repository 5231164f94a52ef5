import { memo, useMemo, useRef, useState, useSyncExternalStore } from 'react'
import { LIMITS } from '../../../shared/constants.ts'
import type { Column } from '../../../shared/records.ts'
import { FlameIcon, GripIcon, MoreIcon, PlusIcon } from '../ui/icons.tsx'
import { Menu } from '../ui/menu.tsx'
import { renameColumn } from './board-actions.ts'
import type { BoardStore, CardView } from './board-store.ts'
import { CardList, type HeightCache } from './card-list.tsx'
import type { DragStore, ListRegistry } from './drag.ts'
import type { PresenceStore } from './presence.ts'
import { useColumnCards } from './use-board.ts'

export const ROLE_LABELS = {
  backlog: 'Backlog',
  ready: 'Ready',
  in_progress: 'In progress',
  done: 'Done',
  blocked: 'Blocked',
} as const

export type CardFilter = (card: CardView, column: Column) => boolean

export interface ColumnActions {
  onOpen: (id: string) => void
  onCardKeyDown: (e: React.KeyboardEvent<HTMLButtonElement>, id: string) => void
  onAddCard: (columnId: string, title: string) => void
  onToggleFire: (column: Column) => void
  onSettings: (column: Column) => void
  onDelete: (column: Column) => void
  onMove: (column: Column, by: -1 | 1) => void
}

interface Props {
  column: Column
  store: BoardStore
  presence: PresenceStore
  drag: DragStore
  lists: ListRegistry
  heights: HeightCache
  filter: CardFilter | null
  filterKey: string
  projectName: string | null
  actions: ColumnActions
  pendingFocus: { current: string | null }
  isFirst: boolean
  isLast: boolean
  /** Where the column records the cards it shows, for keyboard moves across columns. */
  visibleRecord: Map<string, readonly string[]>
}

/** A column: header (title, role, fire, count, menu), its virtualised cards and a composer. */
export const BoardColumn = memo(function BoardColumn({
  column,
  store,
  presence,
  drag,
  lists,
  heights,
  filter,
  filterKey,
  projectName,
  actions,
  pendingFocus,
  isFirst,
  isLast,
  visibleRecord,
}: Props) {
  const { ids, version } = useColumnCards(store, column.id)
  const visible = useMemo(() => {
    // `version` changes when any card of the column changes, which a filter must see.
    void version
    void filterKey
    if (!filter) return ids
    return ids.filter((id) => {
      const c = store.card(id)
      return c ? filter(c, column) : false
    })
  }, [ids, version, filter, filterKey, store, column])
  visibleRecord.set(column.id, visible)
  const [renaming, setRenaming] = useState(false)
  const [adding, setAdding] = useState(false)
  const columnDrag = useSyncExternalStore(
    drag.subscribe,
    () => drag.state?.kind === 'column' && drag.state.id === column.id,
  )
  const titleId = `column-title-${column.id}`
  // A role badge that says the column's own name again ("Done" under Done) says nothing.
  const showRole =
    column.role !== null &&
    column.role !== undefined &&
    ROLE_LABELS[column.role].toLowerCase() !== column.title.trim().toLowerCase()

  return (
    <section
      className={`column${column.onFire ? ' column-fire' : ''}${columnDrag ? ' column-dragging' : ''}`}
      data-column-id={column.id}
      aria-labelledby={titleId}
    >
      <header className="column-header">
        <span
          className="column-handle"
          data-column-handle
          title="Drag to reorder the column"
          aria-hidden="true"
        >
          <GripIcon size={14} />
        </span>
        {renaming ? (
          <RenameField
            initial={column.title}
            label="Column title"
            max={LIMITS.columnTitle.max}
            onDone={(title) => {
              setRenaming(false)
              if (title) renameColumn(store.doc, column.id, title)
            }}
          />
        ) : (
          <h2
            id={titleId}
            className="column-title"
            onDoubleClick={() => setRenaming(true)}
            title={column.role ? `Role: ${ROLE_LABELS[column.role]}` : undefined}
          >
            {column.title}
          </h2>
        )}
        <span className="column-count" title={`${visible.length} cards shown`}>
          {filter && visible.length !== ids.length ? `${visible.length}/${ids.length}` : ids.length}
        </span>
        <span className="column-spacer" />
        <button
          type="button"
          className="icon-btn"
          aria-label={`Add a card to ${column.title}`}
          title="Add a card"
          onClick={() => setAdding(true)}
        >
          <PlusIcon size={15} />
        </button>
        <Menu
          label={`Actions for column ${column.title}`}
          trigger={<MoreIcon />}
          align="end"
          items={[
            { label: 'Rename', onSelect: () => setRenaming(true) },
            {
              label: column.onFire ? 'Put the fire out' : 'Put on fire',
              onSelect: () => actions.onToggleFire(column),
            },
            { label: 'Role and fire…', onSelect: () => actions.onSettings(column) },
            !isFirst && { label: 'Move left', onSelect: () => actions.onMove(column, -1) },
            !isLast && { label: 'Move right', onSelect: () => actions.onMove(column, 1) },
            { label: 'Delete column…', danger: true, onSelect: () => actions.onDelete(column) },
          ]}
        />
      </header>
      {(showRole || column.onFire || projectName) && (
        <div className="column-sub">
          {showRole && column.role && (
            <span
              className={`role role-${column.role}`}
              title="The column's role, which agents read"
            >
              {ROLE_LABELS[column.role]}
            </span>
          )}
          {column.onFire && (
            <span className="fire-badge" title="Its cards count as at least high priority">
              <FlameIcon size={12} />
              On fire
            </span>
          )}
          {projectName && <span className="column-project">Project: {projectName}</span>}
        </div>
      )}
      <CardList
        columnId={column.id}
        ids={visible}
        store={store}
        presence={presence}
        drag={drag}
        lists={lists}
        heights={heights}
        onFire={column.onFire}
        onOpen={actions.onOpen}
        onKeyDown={actions.onCardKeyDown}
        pendingFocus={pendingFocus}
        emptyText={filter && ids.length > 0 ? 'No cards match the filters' : 'No cards yet'}
      />
      {adding ? (
        <CardComposer
          columnTitle={column.title}
          onAdd={(title) => actions.onAddCard(column.id, title)}
          onClose={() => setAdding(false)}
        />
      ) : (
        <button type="button" className="add-card" onClick={() => setAdding(true)}>
          <PlusIcon size={14} /> Add card
        </button>
      )}
    </section>
  )
})

export function RenameField({
  initial,
  label,
  max,
  onDone,
}: {
  initial: string
  label: string
  max: number
  onDone: (value: string | null) => void
}) {
  const done = useRef(false)
  const finish = (value: string | null) => {
    if (done.current) return
    done.current = true
    onDone(value)
  }
  return (
    <input
      className="rename-field"
      aria-label={label}
      defaultValue={initial}
      maxLength={max}
      // biome-ignore lint/a11y/noAutofocus: the field appears because the person asked to rename
      autoFocus
      onFocus={(e) => e.currentTarget.select()}
      onBlur={(e) => finish(e.currentTarget.value.trim() || null)}
      onKeyDown={(e) => {
        if (e.key === 'Enter') finish(e.currentTarget.value.trim() || null)
        if (e.key === 'Escape') finish(null)
      }}
    />
  )
}

function CardComposer({
  columnTitle,
  onAdd,
  onClose,
}: {
  columnTitle: string
  onAdd: (title: string) => void
  onClose: () => void
}) {
  const [title, setTitle] = useState('')
  const submit = () => {
    const t = title.trim()
    if (t) onAdd(t)
    setTitle('')
  }
  return (
    <form
      className="composer"
      onSubmit={(e) => {
        e.preventDefault()
        submit()
      }}
    >
      <textarea
        aria-label={`Title of the new card in ${columnTitle}`}
        placeholder="Card title — Enter to add, Esc to close"
        value={title}
        maxLength={LIMITS.taskTitle.max}
        rows={2}
        // biome-ignore lint/a11y/noAutofocus: the composer opens because the person asked to add a card
        autoFocus
        onChange={(e) => setTitle(e.target.value.replace(/\n/g, ' '))}
        onKeyDown={(e) => {
          if (e.key === 'Enter') {
            e.preventDefault()
            submit()
          }
          if (e.key === 'Escape') onClose()
        }}
      />
      <div className="composer-actions">
        <button type="submit" className="btn btn-primary btn-small" disabled={!title.trim()}>
          Add card
        </button>
        <button type="button" className="btn btn-ghost btn-small" onClick={onClose}>
          Done
        </button>
      </div>
    </form>
  )
}
