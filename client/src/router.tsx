import { type AnchorHTMLAttributes, type MouseEvent, useSyncExternalStore } from 'react'
import { Emitter } from './store.ts'

/** A small history router: the app has a handful of routes and needs no more than this. */

const moved = new Emitter()
window.addEventListener('popstate', () => moved.emit())
const subscribe = moved.subscribe

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const current = location.pathname + location.search
  if (to === current) return
  if (options.replace) history.replaceState(null, '', to)
  else history.pushState(null, '', to)
  moved.emit()
}

/** Replaces query parameters on the current path (null removes one). */
export function setQuery(updates: Record<string, string | null>, options = { replace: true }) {
  const params = new URLSearchParams(location.search)
  for (const [k, v] of Object.entries(updates)) {
    if (v === null || v === '') params.delete(k)
    else params.set(k, v)
  }
  const qs = params.toString()
  navigate(`${location.pathname}${qs ? `?${qs}` : ''}`, options)
}

export function useLocation(): { pathname: string; search: string } {
  const href = useSyncExternalStore(subscribe, () => location.pathname + location.search)
  const i = href.indexOf('?')
  return i < 0
    ? { pathname: href, search: '' }
    : { pathname: href.slice(0, i), search: href.slice(i) }
}

export function useQueryParam(name: string): string | null {
  return useSyncExternalStore(subscribe, () => new URLSearchParams(location.search).get(name))
}

/** `/o/:orgId/maps/:mapId` against a path: the named segments, or undefined. */
export function matchPath(pattern: string, pathname: string): Record<string, string> | undefined {
  const want = pattern.split('/').filter(Boolean)
  const got = pathname.split('/').filter(Boolean)
  if (want.length !== got.length) return undefined
  const params: Record<string, string> = {}
  for (let i = 0; i < want.length; i++) {
    const w = want[i] as string
    const g = got[i] as string
    if (w.startsWith(':')) {
      try {
        params[w.slice(1)] = decodeURIComponent(g)
      } catch {
        return undefined
      }
    } else if (w !== g) return undefined
  }
  return params
}

export function Link({
  to,
  onClick,
  ...rest
}: AnchorHTMLAttributes<HTMLAnchorElement> & { to: string }) {
  const handle = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e)
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey)
      return
    e.preventDefault()
    navigate(to)
  }
  return <a href={to} onClick={handle} {...rest} />
}
