import { type RefObject, useCallback, useEffect, useSyncExternalStore } from 'react'
import type * as Y from 'yjs'
import { replaceText } from '../../../shared/ytext.ts'
import { LOCAL } from '../board/board-actions.ts'

/**
 * Binds a textarea to a Y.Text both ways. Typing edits only the part that changed (so two
 * people typing in different places both keep their words); a remote edit updates the
 * field and moves the caret with the text around it rather than jumping.
 */
export function useYTextarea(
  text: Y.Text | undefined,
  ref: RefObject<HTMLTextAreaElement | null>,
  max: number,
): void {
  useEffect(() => {
    const el = ref.current
    if (!el || !text) return
    el.value = text.toString()
    let composing = false
    const push = () => {
      if (composing) return
      const value = el.value.length > max ? el.value.slice(0, max) : el.value
      text.doc?.transact(() => replaceText(text, value), LOCAL)
    }
    const onCompositionStart = () => {
      composing = true
    }
    const onCompositionEnd = () => {
      composing = false
      push()
    }
    const observer = (event: Y.YTextEvent, tr: Y.Transaction) => {
      if (tr.origin === LOCAL) return
      let start = el.selectionStart
      let end = el.selectionEnd
      let index = 0
      for (const op of event.delta) {
        if (op.retain !== undefined) index += op.retain
        else if (typeof op.insert === 'string') {
          const n = op.insert.length
          if (start >= index) start += n
          if (end >= index) end += n
          index += n
        } else if (op.delete !== undefined) {
          const n = op.delete
          if (start > index) start -= Math.min(n, start - index)
          if (end > index) end -= Math.min(n, end - index)
        }
      }
      el.value = text.toString()
      if (document.activeElement === el) el.setSelectionRange(start, end)
      el.dispatchEvent(new Event('y-sync'))
    }
    el.addEventListener('input', push)
    el.addEventListener('compositionstart', onCompositionStart)
    el.addEventListener('compositionend', onCompositionEnd)
    text.observe(observer)
    return () => {
      el.removeEventListener('input', push)
      el.removeEventListener('compositionstart', onCompositionStart)
      el.removeEventListener('compositionend', onCompositionEnd)
      text.unobserve(observer)
    }
  }, [text, ref, max])
}

/** The Y.Text's current string, re-rendering as anyone edits it ('' until it is open). */
export function useYTextString(text: Y.Text | undefined): string {
  const subscribe = useCallback(
    (notify: () => void) => {
      if (!text) return () => {}
      text.observe(notify)
      return () => text.unobserve(notify)
    },
    [text],
  )
  return useSyncExternalStore(subscribe, () => text?.toString() ?? '')
}
