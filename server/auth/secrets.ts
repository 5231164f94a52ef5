import type { Db } from '../../persistence/types.ts'
import { randomToken } from './crypto.ts'

/**
 * A signing secret shared by every server process: made once, kept in Postgres. The
 * first process to ask creates it; the others read the same row.
 */
export async function sharedSecret(db: Db, name: string): Promise<string> {
  await db.query(
    'insert into server_secrets (name, secret) values ($1, $2) on conflict do nothing',
    [name, randomToken(32)],
  )
  const [row] = await db.query<{ secret: string }>(
    'select secret from server_secrets where name = $1',
    [name],
  )
  if (!row) throw new Error(`secret ${name} missing after insert`)
  return row.secret
}
