/**
 * The service worker: keeps the built app (index.html and every hashed file) so it opens
 * with no connection. The build fills in BUILD and ASSETS; a new build is a new worker,
 * which replaces the old cache. The service's own paths are never intercepted.
 */

const BUILD = '__BUILD__'
const ASSETS: string[] = []

interface SwExtendableEvent extends Event {
  waitUntil(promise: Promise<unknown>): void
}
interface SwFetchEvent extends SwExtendableEvent {
  readonly request: Request
  respondWith(response: Promise<Response> | Response): void
}
interface SwScope {
  skipWaiting(): Promise<void>
  readonly clients: { claim(): Promise<void> }
  readonly location: Location
  addEventListener(type: 'install' | 'activate', fn: (e: SwExtendableEvent) => void): void
  addEventListener(type: 'fetch', fn: (e: SwFetchEvent) => void): void
}

const sw = self as unknown as SwScope
const CACHE = `corkboard-${BUILD}`
const SERVICE_PATHS = ['/api/', '/sync', '/files/', '/healthz', '/mcp']

sw.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(['/', ...ASSETS]))
      .then(() => sw.skipWaiting()),
  )
})

sw.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) =>
        Promise.all(
          names
            .filter((n) => n.startsWith('corkboard-') && n !== CACHE)
            .map((n) => caches.delete(n)),
        ),
      )
      .then(() => sw.clients.claim()),
  )
})

async function fromCache(request: Request | string): Promise<Response | undefined> {
  const cache = await caches.open(CACHE)
  return cache.match(request)
}

sw.addEventListener('fetch', (event) => {
  const { request } = event
  if (request.method !== 'GET') return
  const url = new URL(request.url)
  if (url.origin !== sw.location.origin) return
  if (SERVICE_PATHS.some((p) => url.pathname.startsWith(p))) return

  if (request.mode === 'navigate') {
    // The newest app when the server answers; the kept one when it cannot be reached.
    event.respondWith(fetch(request).catch(async () => (await fromCache('/')) ?? Response.error()))
    return
  }
  event.respondWith(
    fromCache(request).then(
      (hit) =>
        hit ??
        fetch(request).then(async (res) => {
          if (res.ok && url.pathname.startsWith('/assets/')) {
            const cache = await caches.open(CACHE)
            await cache.put(request, res.clone())
          }
          return res
        }),
    ),
  )
})
