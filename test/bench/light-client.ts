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
  /** Sends a call; `done` gets the answer's bytes (a 200) or the error. */
  const send = (
    action: string,
    params: unknown,
    done: (error: Error | undefined, answer?: Buffer) => void,
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
        res.on('end', () => {
          const answer = Buffer.concat(chunks)
          if (res.statusCode === 200) done(undefined, answer)
          else done(new Error(`${action} → ${res.statusCode} ${answer.toString('utf8')}`))
        })
      },
    )
    req.on('error', (error) => done(error))
    req.end(body)
  }
  return {
    ok(action: string, params?: unknown): Promise<unknown> {
      return new Promise((resolve, reject) =>
        send(action, params, (error, answer) =>
          error ? reject(error) : resolve(JSON.parse((answer as Buffer).toString('utf8'))),
        ),
      )
    },
    /**
     * The answer's length, neither decoded nor parsed: the service's time and the transfer,
     * without what the client's JSON.parse (and its garbage) adds to a large answer.
     */
    received(action: string, params?: unknown): Promise<number> {
      return new Promise((resolve, reject) =>
        send(action, params, (error, answer) =>
          error ? reject(error) : resolve((answer as Buffer).length),
        ),
      )
    },
    close: () => agent.destroy(),
  }
}
