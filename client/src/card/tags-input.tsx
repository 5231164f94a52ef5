import { useId, useState } from 'react'
import { LIMITS } from '../../../shared/constants.ts'
import { normaliseTags } from '../board/board-actions.ts'
import { CloseIcon } from '../ui/icons.tsx'
import { toast } from '../ui/toast.tsx'

/** Tags as chips: Enter or comma adds, Backspace in the empty field removes the last. */
export function TagsInput({
  tags,
  suggestions,
  disabled,
  onChange,
}: {
  tags: readonly string[]
  suggestions: readonly string[]
  disabled: boolean
  onChange: (tags: string[]) => void
}) {
  const [draft, setDraft] = useState('')
  const listId = useId()
  const commit = (next: string[]) => {
    const { tags: clean, error } = normaliseTags(next)
    if (error) {
      toast('error', error)
      return false
    }
    onChange(clean)
    return true
  }
  const add = (value: string = draft) => {
    const parts = value
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean)
    if (parts.length === 0) return
    if (commit([...tags, ...parts])) setDraft('')
  }
  return (
    <div className={`tags-input${disabled ? ' disabled' : ''}`}>
      <ul className="tag-chips" aria-label="Tags">
        {tags.map((t) => (
          <li key={t} className="chip chip-removable">
            {t}
            {!disabled && (
              <button
                type="button"
                aria-label={`Remove tag ${t}`}
                onClick={() => commit(tags.filter((x) => x !== t))}
              >
                <CloseIcon size={11} />
              </button>
            )}
          </li>
        ))}
      </ul>
      {!disabled && tags.length < LIMITS.tagsPerCard && (
        <>
          <input
            aria-label="Add a tag"
            placeholder={tags.length === 0 ? 'Add tags…' : 'Add…'}
            value={draft}
            maxLength={LIMITS.tagLength * 2}
            list={listId}
            onChange={(e) => {
              const v = e.target.value
              if (v.endsWith(',')) {
                setDraft(v.slice(0, -1))
                add(v.slice(0, -1))
              } else setDraft(v)
            }}
            onBlur={() => add()}
            onKeyDown={(e) => {
              if (e.key === 'Enter') {
                e.preventDefault()
                add()
              } else if (e.key === 'Backspace' && draft === '' && tags.length > 0) {
                commit(tags.slice(0, -1))
              }
            }}
          />
          <datalist id={listId}>
            {suggestions
              .filter((s) => !tags.some((t) => t.toLowerCase() === s.toLowerCase()))
              .map((s) => (
                <option key={s} value={s} />
              ))}
          </datalist>
        </>
      )}
    </div>
  )
}
