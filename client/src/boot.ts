/**
 * The first script the page runs, on its own and importing nothing, so it starts as soon as
 * the HTML is read rather than after the app's code is compiled and evaluated (about a
 * tenth of a second later): it asks who is signed in and, on a page of an organisation,
 * for the live documents' sync token. The app takes these answers (api/http.ts) instead of
 * asking again; each is taken once, and nothing else waits on this script.
 */
export interface BootRequests {
  /** `${method} ${path}` (path under /api/app) → the response on its way. */
  started: Map<string, Promise<Response>>
}

declare global {
  interface Window {
    corkboardBoot?: BootRequests
  }
}

/** The organisation a page of the app is about (`/o/<orgId>/...`), if any. */
export function orgIdInPath(pathname: string): string | undefined {
  return /^\/o\/([0-9a-f-]{36})(?:\/|$)/i.exec(pathname)?.[1]
}

const started = new Map<string, Promise<Response>>()
const begin = (method: string, path: string) => {
  const response = fetch(`/api/app${path}`, { method, credentials: 'same-origin' })
  // Unhandled until the app takes it; a failure is the app's to see then.
  response.catch(() => {})
  started.set(`${method} ${path}`, response)
}
if (navigator.onLine) {
  begin('GET', '/me')
  const orgId = orgIdInPath(location.pathname)
  if (orgId) begin('POST', `/orgs/${orgId}/sync-token`)
}
window.corkboardBoot = { started }
