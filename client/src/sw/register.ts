/** A page of an organisation whose documents take longer than this installs its worker anyway. */
const SETTLE_CAP_MS = 10_000

let settle = () => {}
const settled = new Promise<void>((resolve) => {
  settle = resolve
})

/** The page shows what it was opened for (its organisation's documents are in sync). */
export function pageSettled(): void {
  settle()
}

/**
 * Registers the service worker, which keeps the app's files so the app opens with no
 * connection (the documents themselves live in IndexedDB). Installing it fetches and stores
 * every built file: on a first visit that work would compete with showing the board (the
 * page, its workers and the server share the machine's cores), so it waits until the page
 * has shown what it was opened for, and then for an idle moment. A page that is not an
 * organisation's has nothing to wait for; one whose documents do not sync (offline, signed
 * out) waits ten seconds at most.
 */
export function registerServiceWorker(): void {
  if (!('serviceWorker' in navigator)) return
  const register = () => {
    navigator.serviceWorker.register('/sw.js').catch(() => {
      // No service worker (e.g. plain http on another host): the app still works online.
    })
  }
  const start = () => {
    setTimeout(settle, window.corkboardBoot?.orgId ? SETTLE_CAP_MS : 0)
    void settled.then(() => {
      if (typeof requestIdleCallback === 'function')
        requestIdleCallback(register, { timeout: 2000 })
      else setTimeout(register, 0)
    })
  }
  if (document.readyState === 'complete') start()
  else window.addEventListener('load', start, { once: true })
}
