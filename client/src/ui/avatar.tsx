import { colorFor } from '../live/org-live.ts'

export function initials(name: string): string {
  const parts = name.trim().split(/\s+/).filter(Boolean)
  if (parts.length === 0) return '?'
  const first = parts[0]?.[0] ?? ''
  const last = parts.length > 1 ? (parts[parts.length - 1]?.[0] ?? '') : ''
  return (first + last).toUpperCase()
}

export function Avatar({
  id,
  name,
  color,
  size = 22,
  title,
}: {
  id: string
  name: string
  color?: string
  size?: number
  title?: string
}) {
  return (
    <span
      className="avatar"
      title={title ?? name}
      style={{
        width: size,
        height: size,
        fontSize: Math.round(size * 0.42),
        background: color ?? colorFor(id),
      }}
    >
      <span aria-hidden="true">{initials(name)}</span>
      <span className="sr-only">{title ?? name}</span>
    </span>
  )
}
