import { createHash } from 'node:crypto'
import { readdir, readFile, stat } from 'node:fs/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { extname, join, normalize, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { brotliCompress, gzip, constants as zlib } from 'node:zlib'

const brotli = promisify(brotliCompress)
const gzipped = promisify(gzip)

/** Where `npm run build` puts the web app. */
export const CLIENT_DIST = fileURLToPath(new URL('../../client/dist/', import.meta.url))

/**
 * Paths that belong to the service, never to the web app: an unknown path under them is
 * the API's JSON 404, not the app's index.html.
 */
const RESERVED = ['/api', '/sync', '/files', '/healthz', '/mcp']

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
}

const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.svg', '.map', '.txt'])

/**
 * The page may only talk to its own origin (HTTP and the live-sync WebSocket); style
 * attributes are inline because React and the canvas library position things with them.
 * Scripts come from the origin, and inline ones only by the hash of their text: the page's
 * first script is written into index.html (client/src/boot/boot.ts), so those hashes are
 * read from the page served (inlineScriptHashes).
 */
function contentSecurityPolicy(scriptHashes: readonly string[] = []): string {
  return [
    "default-src 'self'",
    ["script-src 'self'", ...scriptHashes.map((h) => `'${h}'`)].join(' '),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "connect-src 'self' ws: wss:",
    "worker-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'self'",
    "form-action 'self'",
  ].join('; ')
}

/** `sha256-…` of every inline script in a page, as a Content-Security-Policy names it. */
export function inlineScriptHashes(html: string): string[] {
  const hashes: string[] = []
  for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
    if (/\bsrc\s*=/i.test(m[1] ?? '')) continue
    const digest = createHash('sha256')
      .update(m[2] ?? '', 'utf8')
      .digest('base64')
    hashes.push(`sha256-${digest}`)
  }
  return hashes
}

/**
 * What every page of the service carries, the 503 "not built" page included: the policy
 * above, and X-Frame-Options for browsers that predate `frame-ancestors` (clickjacking: a
 * page elsewhere must not show the board in a frame and trick clicks onto it).
 */
function pageHeaders(scriptHashes?: readonly string[]): Record<string, string> {
  return {
    'content-security-policy': contentSecurityPolicy(scriptHashes),
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
  }
}

interface CachedFile {
  mtimeMs: number
  size: number
  body: Buffer
  etag: string
  type: string
  /** A page's inline scripts, allowed by hash (inlineScriptHashes). */
  scriptHashes?: string[]
  /** Compressed on the thread pool, once per file (a 450 kB bundle takes ~0.1 s). */
  gzip?: Promise<Buffer>
  br?: Promise<Buffer>
}

function isReserved(pathname: string): boolean {
  return RESERVED.some((p) => pathname === p || pathname.startsWith(`${p}/`))
}

/**
 * Hashed build output never changes under its name, so browsers keep it for a year without
 * asking; everything else (index.html, the service worker) is revalidated on every load so
 * a deploy reaches people at once.
 */
function cacheControl(relative: string): string {
  return relative.startsWith(`assets${sep}`) ? 'public, max-age=31536000, immutable' : 'no-cache'
}

/**
 * Serves the built web app (client/dist): files as they are, and index.html for any other
 * page path so the app's own router can answer deep links. Never answers for the service's
 * paths (/api, /sync, /files, /healthz, /mcp) and only for GET and HEAD.
 */
export function staticSite(root: string = CLIENT_DIST) {
  const files = new Map<string, CachedFile>()

  async function load(relative: string): Promise<CachedFile | undefined> {
    const full = join(root, relative)
    const info = await stat(full).catch(() => undefined)
    if (!info?.isFile()) return undefined
    const cached = files.get(relative)
    if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size) return cached
    const body = await readFile(full)
    const file: CachedFile = {
      mtimeMs: info.mtimeMs,
      size: info.size,
      body,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      type: TYPES[extname(relative).toLowerCase()] ?? 'application/octet-stream',
    }
    if (file.type.startsWith('text/html')) file.scriptHashes = inlineScriptHashes(body.toString())
    files.set(relative, file)
    return file
  }

  async function encoded(
    file: CachedFile,
    relative: string,
    accept: string,
  ): Promise<{ body: Buffer; encoding: 'br' | 'gzip' | undefined }> {
    if (file.body.length < 1024 || !COMPRESSIBLE.has(extname(relative).toLowerCase())) {
      return { body: file.body, encoding: undefined }
    }
    if (/\bbr\b/.test(accept)) return { body: await brotliOf(file), encoding: 'br' }
    if (/\bgzip\b/.test(accept)) {
      file.gzip ??= gzipped(file.body, { level: 9 })
      return { body: await file.gzip, encoding: 'gzip' }
    }
    return { body: file.body, encoding: undefined }
  }

  const brotliOf = (file: CachedFile) => {
    file.br ??= brotli(file.body, {
      params: { [zlib.BROTLI_PARAM_QUALITY]: 9, [zlib.BROTLI_PARAM_SIZE_HINT]: file.body.length },
    })
    return file.br
  }

  async function send(
    req: IncomingMessage,
    res: ServerResponse,
    file: CachedFile,
    relative: string,
  ): Promise<void> {
    const headers: Record<string, string> = {
      'content-type': file.type,
      'cache-control': cacheControl(relative),
      etag: file.etag,
      vary: 'accept-encoding',
      'x-content-type-options': 'nosniff',
    }
    if (file.scriptHashes) Object.assign(headers, pageHeaders(file.scriptHashes))
    if (req.headers['if-none-match'] === file.etag) {
      res.writeHead(304, headers)
      res.end()
      return
    }
    const { body, encoding } = await encoded(
      file,
      relative,
      String(req.headers['accept-encoding'] ?? ''),
    )
    if (encoding) headers['content-encoding'] = encoding
    headers['content-length'] = String(body.length)
    res.writeHead(200, headers)
    res.end(req.method === 'HEAD' ? undefined : body)
  }

  return {
    /**
     * Reads and compresses the built files ahead of the first visitor (in the background,
     * off the event loop): the first page load after a start does not wait for it.
     */
    async warm(): Promise<void> {
      const names = await readdir(root, { recursive: true }).catch(() => [] as string[])
      for (const relative of names) {
        if (!COMPRESSIBLE.has(extname(relative).toLowerCase())) continue
        if (relative.split(sep).some((part) => part.startsWith('.'))) continue
        const file = await load(relative)
        if (file && file.body.length >= 1024) await brotliOf(file)
      }
    },

    /** Answers the request if it is the web app's; false leaves it to the caller (a 404). */
    async serve(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<boolean> {
      if (req.method !== 'GET' && req.method !== 'HEAD') return false
      if (isReserved(pathname)) return false
      let decoded: string
      try {
        decoded = decodeURIComponent(pathname)
      } catch {
        return false
      }
      const relative = normalize(decoded).replace(/^[/\\]+/, '')
      // No way out of the build folder, and nothing hidden (e.g. Vite's .vite/ metadata).
      if (relative.startsWith('..') || relative.split(sep).some((s) => s.startsWith('.'))) {
        return false
      }
      const file = relative === '' ? undefined : await load(relative)
      if (file) {
        await send(req, res, file, relative)
        return true
      }
      // A missing asset is a 404, not the page: a stale tab asking for an old chunk must
      // fail loudly rather than parse HTML as JavaScript.
      if (extname(relative) !== '') return false
      const index = await load('index.html')
      if (!index) {
        const text =
          'The web app is not built. Run `npm run build` (npm start does it for you), then reload.'
        res.writeHead(503, {
          'content-type': 'text/plain; charset=utf-8',
          'cache-control': 'no-store',
          'x-content-type-options': 'nosniff',
          ...pageHeaders(),
        })
        res.end(req.method === 'HEAD' ? undefined : text)
        return true
      }
      await send(req, res, index, 'index.html')
      return true
    },
  }
}
