import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import type { Person, Reply } from '../support/client.ts'

/**
 * One request as a browser or a script might send it: the caller picks every header (the
 * Person helper always sends JSON), and the person's session cookie goes along when given.
 */
export async function send(
  url: string,
  method: string,
  path: string,
  options: {
    person?: Person
    headers?: Record<string, string>
    body?: string | Uint8Array<ArrayBuffer>
  } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers }
  if (options.person?.cookie) headers.cookie = options.person.cookie
  const res = await fetch(`${url}${path}`, { method, headers, body: options.body })
  const text = await res.text()
  let body: any
  try {
    body = text ? JSON.parse(text) : undefined
  } catch {
    body = text
  }
  return { status: res.status, body, headers: res.headers }
}

/** The value of the cookie `name` among a response's Set-Cookie headers, attributes included. */
export function setCookie(headers: Headers, name: string): string | undefined {
  return headers.getSetCookie().find((c) => c.startsWith(`${name}=`))
}

/** `name=value` of a Set-Cookie header, as a browser sends it back. */
export const cookiePair = (header: string | undefined) => header?.split(';')[0] ?? ''

/** Hocuspocus wire messages (types.ts and auth.ts of @hocuspocus/server and common). */
const MESSAGE_SYNC = 0
const MESSAGE_AUTH = 2
const AUTH_TOKEN = 0
const AUTH_AUTHENTICATED = 2

/** What a provider sends first for a document: its token. */
export function authMessage(documentName: string, token: string): Uint8Array<ArrayBuffer> {
  const e = encoding.createEncoder()
  encoding.writeVarString(e, documentName)
  encoding.writeVarUint(e, MESSAGE_AUTH)
  encoding.writeVarUint(e, AUTH_TOKEN)
  encoding.writeVarString(e, token)
  return new Uint8Array(encoding.toUint8Array(e))
}

/**
 * A sync message for a document of exactly `bytes` bytes: before the document is
 * authenticated the server only queues it, so its size is all that matters.
 */
export function syncMessageOfSize(documentName: string, bytes: number): Uint8Array<ArrayBuffer> {
  const head = encoding.createEncoder()
  encoding.writeVarString(head, documentName)
  encoding.writeVarUint(head, MESSAGE_SYNC)
  const headBytes = encoding.toUint8Array(head)
  // The length prefix of the padding takes 1 to 5 bytes; find the padding that fits exactly.
  for (let prefix = 1; prefix <= 5; prefix++) {
    const padding = bytes - headBytes.length - prefix
    const e = encoding.createEncoder()
    encoding.writeUint8Array(e, headBytes)
    encoding.writeVarUint8Array(e, new Uint8Array(padding))
    const out = new Uint8Array(encoding.toUint8Array(e))
    if (out.length === bytes) return out
  }
  throw new Error(`no sync message of exactly ${bytes} bytes`)
}

/** Whether a server message says the document was authenticated. */
export function isAuthenticated(data: ArrayBuffer): boolean {
  const d = decoding.createDecoder(new Uint8Array(data))
  decoding.readVarString(d)
  return decoding.readVarUint(d) === MESSAGE_AUTH && decoding.readVarUint(d) === AUTH_AUTHENTICATED
}

/** A raw WebSocket on /sync with its close event as a promise. */
export function openSocket(url: string): {
  ws: WebSocket
  opened: Promise<void>
  closed: Promise<{ code: number; at: number }>
  openedAt: () => number
} {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/sync`)
  ws.binaryType = 'arraybuffer'
  let openedAt = 0
  const opened = new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => {
      openedAt = Date.now()
      resolve()
    })
    ws.addEventListener('error', () => reject(new Error('websocket failed to open')))
  })
  const closed = new Promise<{ code: number; at: number }>((resolve) => {
    ws.addEventListener('close', (e) => resolve({ code: e.code, at: Date.now() }))
  })
  opened.catch(() => {})
  return { ws, opened, closed, openedAt: () => openedAt }
}

/** Resolves with the first message `accept` takes. */
export function nextMessage(ws: WebSocket, accept: (data: ArrayBuffer) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const listen = (e: MessageEvent) => {
      if (e.data instanceof ArrayBuffer && accept(e.data)) {
        ws.removeEventListener('message', listen)
        resolve()
      }
    }
    ws.addEventListener('message', listen)
  })
}
