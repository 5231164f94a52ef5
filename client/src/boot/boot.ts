import type { BootRequests } from './boot-types.ts'

/**
 * The page's first script, written into index.html itself (see the inline-boot plugin in
 * vite.config.ts), so it runs as soon as the HTML is read rather than after the app's code
 * has arrived, compiled and run (a tenth of a second later on loopback, more on a real
 * network): it asks who is signed in and, on a page of an organisation, for the live
 * documents' sync token. The app takes these answers (api/http.ts) instead of asking again;
 * each is taken once, and nothing else waits on this script. It imports nothing at run time.
 */
const orgId = /^\/o\/([0-9a-f-]{36})(?:\/|$)/i.exec(location.pathname)?.[1]
const started = new Map<string, Promise<Response>>()
const begin = (method: string, path: string) => {
  const response = fetch(`/api/app${path}`, { method, credentials: 'same-origin' })
  // Unhandled until the app takes it; a failure is the app's to see then.
  response.catch(() => {})
  started.set(`${method} ${path}`, response)
}
if (navigator.onLine) {
  begin('GET', '/me')
  if (orgId) begin('POST', `/orgs/${orgId}/sync-token`)
}
const boot: BootRequests = { started, orgId }
window.corkboardBoot = boot
