import { useEffect, useId, useRef, useState } from 'react'
import { appApi, type SearchHit } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { setQuery } from '../router.tsx'
import { SearchIcon } from '../ui/icons.tsx'
import { MarkdownView } from '../ui/markdown-view.tsx'
import { useWorkspace } from '../workspace.tsx'

/** How long typing pauses before a search leaves: a request per pause, not per key. */
const PAUSE_MS = 120

/** Whether a key press belongs to a field the person is typing in. */
function typingIn(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false
  return target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)
}

/**
 * Search over cards' titles, descriptions and comments (issue 32): results as you type from
 * the server's search index (GET .../search, search_tasks for a person); "/" or Ctrl+K
 * (⌘K) focuses it from anywhere on the board; a hit opens the card at the match.
 */
export function SearchBox() {
  const { org, store } = useWorkspace()
  const input = useRef<HTMLInputElement>(null)
  const [text, setText] = useState('')
  const [archived, setArchived] = useState(false)
  const [hits, setHits] = useState<SearchHit[]>()
  const [error, setError] = useState<string>()
  const [active, setActive] = useState(0)
  const [open, setOpen] = useState(false)
  const asked = useRef(0)
  const listId = useId()

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const ctrlK = (e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'k'
      const slash = e.key === '/' && !e.ctrlKey && !e.metaKey && !e.altKey && !typingIn(e.target)
      if (!ctrlK && !slash) return
      e.preventDefault()
      input.current?.focus()
      input.current?.select()
      setOpen(true)
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [])

  useEffect(() => {
    const q = text.trim()
    const n = ++asked.current
    if (!/[\p{L}\p{N}]/u.test(q)) {
      setHits(undefined)
      setError(undefined)
      return
    }
    const t = setTimeout(() => {
      appApi.search(org.id, q, archived).then(
        (page) => {
          // An older answer arriving late never replaces a newer one.
          if (n !== asked.current) return
          setHits(page.tasks)
          setActive(0)
          setError(undefined)
        },
        (e: unknown) => {
          if (n === asked.current) setError(describeError(e))
        },
      )
    }, PAUSE_MS)
    return () => clearTimeout(t)
  }, [text, archived, org.id])

  const choose = (hit: SearchHit) => {
    const at =
      hit.match.field === 'comment' && hit.match.commentId
        ? `comment:${hit.match.commentId}`
        : hit.match.field
    setQuery({ card: hit.id, at }, { replace: false })
    setOpen(false)
    input.current?.blur()
  }

  const shown = open && text.trim() !== '' && (hits !== undefined || error !== undefined)
  return (
    <div className="search-box" data-testid="search">
      <label className="search-field">
        <SearchIcon size={14} />
        <span className="sr-only">Search cards</span>
        <input
          ref={input}
          type="search"
          placeholder="Search cards  ( / )"
          value={text}
          role="combobox"
          aria-expanded={shown}
          aria-controls={listId}
          aria-activedescendant={shown && hits?.[active] ? `${listId}-${active}` : undefined}
          aria-keyshortcuts="/ Control+K"
          onChange={(e) => {
            setText(e.target.value)
            setOpen(true)
          }}
          onFocus={() => setOpen(true)}
          onBlur={() =>
            setTimeout(() => {
              if (document.activeElement !== input.current) setOpen(false)
            }, 150)
          }
          onKeyDown={(e) => {
            if (e.key === 'Escape') {
              e.preventDefault()
              setOpen(false)
              e.currentTarget.blur()
            } else if (e.key === 'ArrowDown' && hits) {
              e.preventDefault()
              setActive((a) => Math.min(a + 1, hits.length - 1))
            } else if (e.key === 'ArrowUp' && hits) {
              e.preventDefault()
              setActive((a) => Math.max(a - 1, 0))
            } else if (e.key === 'Enter' && hits?.[active]) {
              e.preventDefault()
              choose(hits[active])
            }
          }}
        />
      </label>
      <label className="search-archived small">
        <input type="checkbox" checked={archived} onChange={(e) => setArchived(e.target.checked)} />{' '}
        Archived too
      </label>
      {shown && (
        <div className="search-results" id={listId} role="listbox" aria-label="Search results">
          {error && <p className="field-error">{error}</p>}
          {hits?.length === 0 && <p className="muted small search-empty">No card matches.</p>}
          {hits?.map((hit, i) => (
            <div
              key={hit.id}
              id={`${listId}-${i}`}
              role="option"
              aria-selected={i === active}
              tabIndex={-1}
              className={`search-hit${i === active ? ' active' : ''}`}
              data-task-id={hit.id}
              onMouseDown={(e) => {
                e.preventDefault()
                choose(hit)
              }}
              onMouseEnter={() => setActive(i)}
            >
              <span className="search-hit-title">
                {hit.title}
                {hit.archivedAt && <span className="badge">Archived</span>}
              </span>
              <span className="muted small">
                {store.column(hit.columnId)?.title ?? ''} · in the {hit.match.field}
              </span>
              <MarkdownView text={hit.match.snippet} className="search-snippet small" />
            </div>
          ))}
        </div>
      )}
    </div>
  )
}
