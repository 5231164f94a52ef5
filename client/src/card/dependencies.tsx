import { useEffect, useId, useMemo, useRef, useState } from 'react'
import {
  type DependencyProblem,
  dependencyProblem,
  findCycle,
  foldBlockers,
  MAX_BLOCKERS,
} from '../../../shared/dependencies.ts'
import { appApi } from '../api/app-api.ts'
import { ApiFailure } from '../api/http.ts'
import { updateTask } from '../board/board-actions.ts'
import type { BoardStore, CardView } from '../board/board-store.ts'
import { useBoard } from '../board/use-board.ts'
import { Link, useLocation } from '../router.tsx'
import { BlockedIcon, CheckIcon, CloseIcon } from '../ui/icons.tsx'
import { useWorkspace } from '../workspace.tsx'

/**
 * A card's dependencies in the panel: the cards it waits for ("Blocked by"), which people
 * add and remove unless someone else holds the card's claim, and the cards waiting for it
 * ("Blocks"). Each links to its card. The app refuses what set_task_dependencies refuses
 * (the card itself, more than 50, a cycle) before writing; what it cannot see (a cycle
 * through an archived card) the server reverts, and the revert shows as any other does.
 */
export function Dependencies({ card, locked }: { card: CardView; locked: boolean }) {
  const { store } = useWorkspace()
  // Re-render when a card either list shows changes (title, column, leaving the board).
  const version = useBoard(store, `deps:${card.id}`, (s) => s.depsVersion(card.id))
  const blocks = useMemo(() => {
    void version
    return store.blocks(card.id)
  }, [store, card.id, version])
  const [problem, setProblem] = useState<string>()
  const headingId = useId()

  const write = (blockedBy: string[]) => updateTask(store.doc, card.id, { blockedBy })
  const add = (id: string) => {
    const next = foldBlockers([...card.blockedBy, id])
    const refused = dependencyProblem(store.dependencyBoard(), card.id, next)
    if (refused) {
      setProblem(explain(refused, store, id))
      return false
    }
    setProblem(undefined)
    write(next)
    return true
  }
  const remove = (id: string) => {
    setProblem(undefined)
    write(card.blockedBy.filter((b) => b !== id))
  }
  const open = card.blockedBy.filter((b) => store.isOpen(b)).length

  return (
    <>
      <section className="panel-section deps" aria-labelledby={headingId} data-testid="blocked-by">
        <h3 id={headingId}>
          Blocked by
          {card.blocked ? (
            <span className="badge badge-blocked">
              <BlockedIcon size={11} />
              Waiting for {open} of {card.blockedBy.length}
            </span>
          ) : card.blockedBy.length > 0 ? (
            <span className="badge badge-ok">
              <CheckIcon size={11} />
              All done
            </span>
          ) : null}
        </h3>
        {card.blockedBy.length > 0 ? (
          <ul className="dep-list">
            {card.blockedBy.map((id) => (
              <DependencyRow
                key={id}
                id={id}
                store={store}
                onRemove={locked ? undefined : () => remove(id)}
              />
            ))}
          </ul>
        ) : (
          <p className="muted small">This card waits for no other card.</p>
        )}
        {!locked &&
          (card.blockedBy.length < MAX_BLOCKERS ? (
            <CardPicker
              card={card}
              store={store}
              onPick={add}
              onQuery={() => setProblem(undefined)}
            />
          ) : (
            <p className="field-hint">
              A card waits for at most {MAX_BLOCKERS} cards: remove one to add another.
            </p>
          ))}
        {problem && (
          <p className="form-error small" role="alert" data-testid="dependency-problem">
            {problem}
          </p>
        )}
      </section>
      <section className="panel-section deps" aria-label="Blocks" data-testid="blocks">
        <h3>Blocks</h3>
        {blocks.length > 0 ? (
          <ul className="dep-list">
            {blocks.map((id) => (
              <DependencyRow key={id} id={id} store={store} waiting />
            ))}
          </ul>
        ) : (
          <p className="muted small">No card waits for this one.</p>
        )}
      </section>
    </>
  )
}

/** What the person is told when the app refuses a blocker, with the cards by title. */
function explain(problem: DependencyProblem, store: BoardStore, picked: string): string {
  const title = (id: string) => `“${store.card(id)?.title || 'an archived card'}”`
  switch (problem.type) {
    case 'self':
      return 'A card cannot wait for itself.'
    case 'tooMany':
      return `A card waits for at most ${MAX_BLOCKERS} cards: remove one to add another.`
    case 'cycle': {
      const [self, ...rest] = problem.cycle
      const [first, ...then] = [...rest, self as string].map(title)
      const chain = then.map((t) => `, which waits for ${t}`).join('')
      return `${title(picked)} cannot block ${title(self as string)}: that would make a cycle (${title(self as string)} waits for ${first}${chain}), and no card on it could ever start.`
    }
    default: {
      const never: never = problem
      return never
    }
  }
}

/** A link to another card, keeping the board's filters in the address. */
function useCardHref(): (id: string) => string {
  const { pathname, search } = useLocation()
  return (id) => {
    const params = new URLSearchParams(search)
    params.set('card', id)
    return `${pathname}?${params.toString()}`
  }
}

/** What the server says of a card the board no longer holds: archived (with its title) or gone. */
type OffBoard = { kind: 'archived'; title: string } | { kind: 'gone' }

/**
 * Asks the server about a card that is not on the board (undefined: nothing to ask, or no
 * answer yet, or none to be had offline).
 */
function useOffBoard(id: string | undefined): OffBoard | undefined {
  const { org } = useWorkspace()
  const [known, setKnown] = useState<{ id: string; off: OffBoard }>()
  useEffect(() => {
    if (!id) return
    let current = true
    appApi.archivedTaskOf(org.id, id).then(
      ({ task }) => {
        if (current) setKnown({ id, off: { kind: 'archived', title: task.title } })
      },
      (error: unknown) => {
        if (current && error instanceof ApiFailure && error.status === 404)
          setKnown({ id, off: { kind: 'gone' } })
      },
    )
    return () => {
      current = false
    }
  }, [org.id, id])
  return id && known?.id === id ? known.off : undefined
}

/**
 * One card in a dependency list: its title as a link and where it stands. A blocker shows
 * whether it still holds the card (its column) or not (done, or off the board); a waiting
 * card shows whether it is blocked.
 */
function DependencyRow({
  id,
  store,
  onRemove,
  waiting,
}: {
  id: string
  store: BoardStore
  onRemove?: () => void
  waiting?: boolean
}) {
  const other = useBoard(store, `card:${id}`, (s) => s.card(id))
  const off = useOffBoard(other ? undefined : id)
  const href = useCardHref()
  const column = other ? store.column(other.columnId) : undefined
  const closed = !waiting && !store.isOpen(id)
  const title = other
    ? other.title || 'Untitled'
    : off?.kind === 'archived'
      ? off.title || 'Untitled'
      : 'A card no longer on the board'
  let state: React.ReactNode
  if (!other)
    state = (
      <span className="badge badge-muted">
        {off?.kind === 'archived'
          ? 'Archived'
          : off?.kind === 'gone'
            ? 'Deleted'
            : 'Archived or deleted'}
      </span>
    )
  else if (waiting)
    state = other.blocked ? (
      <span className="badge badge-blocked">
        <BlockedIcon size={11} />
        Blocked
      </span>
    ) : (
      <span className="badge badge-muted">{column?.title ?? 'No column'}</span>
    )
  else if (closed)
    state = (
      <span className="badge badge-ok">
        <CheckIcon size={11} />
        Done
      </span>
    )
  else state = <span className="badge badge-muted">{column?.title ?? 'No column'}</span>
  return (
    <li className={`dep-row${closed ? ' dep-closed' : ''}`} data-dep-id={id}>
      <Link to={href(id)} className="dep-link" title={title}>
        {title}
      </Link>
      {closed && <span className="sr-only"> (closed)</span>}
      {state}
      {onRemove && (
        <button
          type="button"
          className="icon-btn dep-remove"
          aria-label={`Remove blocker ${title}`}
          onClick={onRemove}
        >
          <CloseIcon size={12} />
        </button>
      )}
    </li>
  )
}

const SHOWN = 8

/**
 * Search the board's cards by title and pick one to wait for: a combobox with the
 * listbox pattern (arrows move, Enter picks, Escape closes). A card that waits for this
 * one, directly or through others, is marked, since picking it is refused.
 */
function CardPicker({
  card,
  store,
  onPick,
  onQuery,
}: {
  card: CardView
  store: BoardStore
  onPick: (id: string) => boolean
  onQuery: () => void
}) {
  const [query, setQuery] = useState('')
  const [open, setOpen] = useState(false)
  const [active, setActive] = useState(0)
  const listId = useId()
  const input = useRef<HTMLInputElement>(null)
  const layout = useBoard(store, open ? 'layout' : 'none', (s) => s.layout())

  const { shown, more } = useMemo(() => {
    void layout
    if (!open) return { shown: [], more: 0 }
    const q = query.trim().toLowerCase()
    const taken = new Set(card.blockedBy)
    const order = new Map(store.columns().map((c, i) => [c.id, i]))
    const matches: { card: CardView; at: number }[] = []
    for (const c of store.allCards()) {
      if (c.id === card.id || taken.has(c.id) || c.archivedAt) continue
      const at = q ? c.title.toLowerCase().indexOf(q) : 0
      if (at >= 0) matches.push({ card: c, at })
    }
    // Titles starting with the words typed first, then board order.
    matches.sort(
      (a, b) =>
        Number(a.at !== 0) - Number(b.at !== 0) ||
        (order.get(a.card.columnId) ?? 0) - (order.get(b.card.columnId) ?? 0) ||
        a.card.position - b.card.position,
    )
    return { shown: matches.slice(0, SHOWN).map((m) => m.card), more: matches.length - SHOWN }
  }, [open, query, card, store, layout])

  const pick = (c: CardView) => {
    if (onPick(c.id)) {
      setQuery('')
      setActive(0)
      input.current?.focus()
    } else setOpen(false)
  }
  const current = shown[Math.min(active, shown.length - 1)]

  return (
    <div className="card-picker">
      <input
        ref={input}
        role="combobox"
        aria-label="Add a blocker"
        aria-autocomplete="list"
        aria-expanded={open}
        aria-controls={listId}
        aria-activedescendant={open && current ? `${listId}-${current.id}` : undefined}
        placeholder="Add a card this one waits for…"
        value={query}
        onFocus={() => setOpen(true)}
        onBlur={() => setOpen(false)}
        onChange={(e) => {
          setQuery(e.target.value)
          setActive(0)
          setOpen(true)
          onQuery()
        }}
        onKeyDown={(e) => {
          if (e.key === 'ArrowDown') {
            e.preventDefault()
            setOpen(true)
            setActive((i) => Math.min(i + 1, shown.length - 1))
          } else if (e.key === 'ArrowUp') {
            e.preventDefault()
            setActive((i) => Math.max(i - 1, 0))
          } else if (e.key === 'Enter') {
            e.preventDefault()
            if (open && current) pick(current)
          } else if (e.key === 'Escape' && open) {
            // Closes the list only, not the panel.
            e.preventDefault()
            e.stopPropagation()
            setOpen(false)
          }
        }}
      />
      {open && (
        <div className="popover">
          <div id={listId} role="listbox" aria-label="Cards on the board">
            {shown.map((c) => {
              const cycle = findCycle(store.dependencyBoard(), card.id, [c.id]) !== undefined
              const column = store.column(c.columnId)
              return (
                // biome-ignore lint/a11y/useKeyWithClickEvents: the combobox input handles the keys (listbox pattern); options never take focus.
                <div
                  key={c.id}
                  id={`${listId}-${c.id}`}
                  role="option"
                  tabIndex={-1}
                  aria-selected={c.id === current?.id}
                  className={`picker-option${c.id === current?.id ? ' active' : ''}`}
                  // Keeps focus in the input, so the blur does not close the list first.
                  onMouseDown={(e) => e.preventDefault()}
                  onClick={() => pick(c)}
                >
                  <span className="picker-title">{c.title || 'Untitled'}</span>
                  <span className="muted small">
                    {cycle ? 'waits for this card' : (column?.title ?? '')}
                  </span>
                </div>
              )
            })}
          </div>
          {shown.length === 0 && (
            <p className="muted small picker-empty">
              {query.trim() ? 'No card on the board has that in its title.' : 'No other cards.'}
            </p>
          )}
          {more > 0 && <p className="muted small picker-empty">{more} more: type to narrow</p>}
        </div>
      )}
    </div>
  )
}
