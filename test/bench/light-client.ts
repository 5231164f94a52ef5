import { randomUUID } from 'node:crypto'
import { Agent as HttpAgent, request } from 'node:http'

/**
 * A load generator lighter than fetch: node:http over a keep-alive pool. On a two-core
 * machine the generator shares the CPU with the server and Postgres, so its own cost per
 * request (fetch's is several times this) would otherwise be measured as the service's.
 * `keyed`: each call carries a fresh Idempotency-Key, as the typed client's writes do.
 */
export function lightAgent(baseUrl: string, key: string, sockets = 8, keyed = false) {
  const url = new URL('/api/agent', baseUrl)
  const agent = new HttpAgent({ keepAlive: true, maxSockets: sockets })
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  /** Sends a call; `done` gets the answer's status and bytes, or the connection's error. */
  const send = (
    action: string,
    params: unknown,
    done: (error: Error | undefined, status?: number, answer?: Buffer) => void,
  ): void => {
    const body = JSON.stringify({ action, params })
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent,
        headers: {
          ...headers,
          ...(keyed ? { 'idempotency-key': randomUUID() } : {}),
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => done(undefined, res.statusCode, Buffer.concat(chunks)))
      },
    )
    req.on('error', (error) => done(error))
    req.end(body)
  }
  /** The answer's bytes of a 200; anything else rejects, naming the status and the answer. */
  const answered = (action: string, params: unknown): Promise<Buffer> =>
    new Promise((resolve, reject) =>
      send(action, params, (error, status, answer = Buffer.alloc(0)) => {
        if (error) reject(error)
        else if (status === 200) resolve(answer)
        else reject(new Error(`${action} → ${status} ${answer.toString('utf8')}`))
      }),
    )
  return {
    /** The answer's status and parsed body, whatever the status. */
    call(action: string, params?: unknown): Promise<{ status: number; body: any }> {
      return new Promise((resolve, reject) =>
        send(action, params, (error, status = 0, answer = Buffer.alloc(0)) => {
          if (error) return reject(error)
          const text = answer.toString('utf8')
          resolve({ status, body: text ? JSON.parse(text) : undefined })
        }),
      )
    },
    async ok(action: string, params?: unknown): Promise<unknown> {
      return JSON.parse((await answered(action, params)).toString('utf8'))
    },
    /**
     * The answer's length, neither decoded nor parsed: the service's time and the transfer,
     * without what the client's JSON.parse (and its garbage) adds to a large answer.
     */
    received(action: string, params?: unknown): Promise<number> {
      return answered(action, params).then((answer) => answer.length)
    },
    close: () => agent.destroy(),
  }
}
