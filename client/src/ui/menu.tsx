import { type ReactNode, useEffect, useId, useRef, useState } from 'react'

export interface MenuItem {
  label: string
  onSelect: () => void
  danger?: boolean
  disabled?: boolean
  icon?: ReactNode
}

/**
 * A menu button (WAI-ARIA menu pattern): arrow keys move, Enter picks, Escape closes and
 * returns focus to the button.
 */
export function Menu({
  label,
  trigger,
  items,
  className,
  align = 'start',
}: {
  label: string
  trigger: ReactNode
  items: (MenuItem | false | undefined)[]
  className?: string
  align?: 'start' | 'end'
}) {
  const [open, setOpen] = useState(false)
  const button = useRef<HTMLButtonElement>(null)
  const list = useRef<HTMLDivElement>(null)
  const id = useId()
  const shown = items.filter((i): i is MenuItem => Boolean(i))

  useEffect(() => {
    if (!open) return
    const first = list.current?.querySelector<HTMLElement>('[role="menuitem"]:not([disabled])')
    first?.focus()
    const outside = (e: PointerEvent) => {
      const t = e.target as Node
      if (!list.current?.contains(t) && !button.current?.contains(t)) setOpen(false)
    }
    document.addEventListener('pointerdown', outside)
    return () => document.removeEventListener('pointerdown', outside)
  }, [open])

  const onKeyDown = (e: React.KeyboardEvent) => {
    const entries = [
      ...(list.current?.querySelectorAll<HTMLElement>('[role="menuitem"]:not([disabled])') ?? []),
    ]
    const at = entries.indexOf(document.activeElement as HTMLElement)
    const focus = (i: number) => entries[(i + entries.length) % entries.length]?.focus()
    switch (e.key) {
      case 'ArrowDown':
        e.preventDefault()
        focus(at + 1)
        break
      case 'ArrowUp':
        e.preventDefault()
        focus(at - 1)
        break
      case 'Home':
        e.preventDefault()
        focus(0)
        break
      case 'End':
        e.preventDefault()
        focus(entries.length - 1)
        break
      case 'Escape':
        e.preventDefault()
        e.stopPropagation()
        setOpen(false)
        button.current?.focus()
        break
      case 'Tab':
        setOpen(false)
        break
      default:
        break
    }
  }

  return (
    <div className={`menu-wrap ${className ?? ''}`}>
      <button
        ref={button}
        type="button"
        className="icon-btn"
        aria-label={label}
        title={label}
        aria-haspopup="menu"
        aria-expanded={open}
        aria-controls={open ? id : undefined}
        onClick={(e) => {
          e.stopPropagation()
          setOpen((o) => !o)
        }}
        onPointerDown={(e) => e.stopPropagation()}
      >
        {trigger}
      </button>
      {open && (
        <div
          ref={list}
          id={id}
          role="menu"
          aria-label={label}
          className={`menu menu-${align}`}
          onKeyDown={onKeyDown}
          tabIndex={-1}
        >
          {shown.map((item) => (
            <button
              key={item.label}
              type="button"
              role="menuitem"
              className={`menu-item${item.danger ? ' danger' : ''}`}
              disabled={item.disabled}
              onClick={(e) => {
                e.stopPropagation()
                setOpen(false)
                button.current?.focus()
                item.onSelect()
              }}
            >
              {item.icon}
              {item.label}
            </button>
          ))}
        </div>
      )}
    </div>
  )
}
