import { useCallback, useSyncExternalStore } from 'react'
import type * as Y from 'yjs'

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
