import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto'

/**
 * scrypt, memory-hard: N=2^15, r=8 costs 32 MiB per hash. The parameters travel with
 * the hash (`scrypt$N$r$p$salt$hash`), so raising the cost later keeps old hashes valid.
 */
const R = 8
const P = 1
const KEY_LENGTH = 32

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(
      password,
      salt,
      KEY_LENGTH,
      { N: n, r, p, maxmem: 256 * n * r + 1024 * 1024 },
      (err, key) => (err ? reject(err) : resolve(key)),
    )
  })
}

export async function hashPassword(password: string, n: number): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt, n, R, P)
  return `scrypt$${n}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$')
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false
  const expected = Buffer.from(hash, 'base64')
  const key = await derive(password, Buffer.from(salt, 'base64'), Number(n), Number(r), Number(p))
  return key.length === expected.length && timingSafeEqual(key, expected)
}
