import { type ReactNode, useId } from 'react'

/**
 * A form control with its visible label tied by id (not by wrapping), so its accessible
 * name is exactly the label, whatever the control holds.
 */
export function Labeled({
  label,
  hint,
  className,
  children,
}: {
  label: string
  hint?: string
  className?: string
  children: (props: { id: string; 'aria-describedby'?: string }) => ReactNode
}) {
  const id = useId()
  return (
    <div className={`field ${className ?? ''}`}>
      <label htmlFor={id}>{label}</label>
      {children(hint ? { id, 'aria-describedby': `${id}-hint` } : { id })}
      {hint && (
        <span id={`${id}-hint`} className="field-hint">
          {hint}
        </span>
      )}
    </div>
  )
}
