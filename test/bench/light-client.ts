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
  return {
    ok(action: string, params?: unknown): Promise<unknown> {
      const body = JSON.stringify({ action, params })
      return new Promise((resolve, reject) => {
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
              const text = Buffer.concat(chunks).toString('utf8')
              if (res.statusCode !== 200) reject(new Error(`${action} → ${res.statusCode} ${text}`))
              else resolve(JSON.parse(text))
            })
          },
        )
        req.on('error', reject)
        req.end(body)
      })
    },
    close: () => agent.destroy(),
  }
}
