import { useEffect, useRef, useState } from 'react'
import { Avatar } from '../ui/avatar.tsx'
import { useWorkspace } from '../workspace.tsx'

/** The members a card is assigned to: chips to remove, a menu to add. */
export function Assignees({
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
