import type { Db } from '../../persistence/types.ts'
import type { Logger } from '../http/json.ts'
import { Sweeper } from '../sweeper.ts'

/** A registered client nobody has granted anything this long after registering goes. */
export const UNUSED_CLIENT_DAYS = 30
/** Rows deleted per statement: short transactions, short locks. */
const BATCH = 1000

export interface OAuthSweepCounts {
  codes: number
  tokens: number
  revokedGrants: number
  clients: number
}

/**
 * Each sweep, as one statement deleting at most {@link BATCH} rows. `skip locked`: a row
 * another process's sweep (or a token request) holds is left for that one, never waited on.
 */
const SWEEPS: Record<keyof OAuthSweepCounts, string> = {
  // Expired codes; a used one is already gone (taken by deleting it).
  codes: `delete from oauth_codes where code_hash in (
            select code_hash from oauth_codes where expires_at <= now()
             limit ${BATCH} for update skip locked)`,
  // Expired access and refresh tokens. A spent refresh token is kept until its own expiry:
  // until then, presenting it again is recognised as a replay and revokes the grant; after
  // it, it would be refused as expired anyway.
  tokens: `delete from oauth_tokens where token_hash in (
             select token_hash from oauth_tokens where expires_at <= now()
              limit ${BATCH} for update skip locked)`,
  // A revoked grant's row (its tokens went when it was revoked). Its key row and robot stay,
  // revoked, as a revoked API key's do: they are what its past writes are attributed to.
  revokedGrants: `delete from oauth_grants where id in (
                    select id from oauth_grants where revoked_at is not null
                     limit ${BATCH} for update skip locked)`,
  // Clients registered long ago that no grant or pending code uses.
  clients: `delete from oauth_clients where id in (
              select c.id from oauth_clients c
               where c.created_at < now() - make_interval(days => ${UNUSED_CLIENT_DAYS})
                 and not exists (select 1 from oauth_grants g where g.client_id = c.id)
                 and not exists (select 1 from oauth_codes o where o.client_id = c.id)
               limit ${BATCH} for update of c skip locked)`,
}

/**
 * Deletes what no sign-in can use any more (the house rule: stored rows follow what is in
 * use), in batches until none is left. Throws when the database does; {@link OAuthSweeper}
 * logs that and tries again at its next turn.
 */
export async function sweepOAuth(db: Db): Promise<OAuthSweepCounts> {
  const counts: OAuthSweepCounts = { codes: 0, tokens: 0, revokedGrants: 0, clients: 0 }
  // In this order: a revoked grant's row going first lets its client go in the same sweep.
  for (const kind of ['codes', 'tokens', 'revokedGrants', 'clients'] as const) {
    for (;;) {
      const deleted = await db.query(`${SWEEPS[kind]} returning 1`)
      counts[kind] += deleted.length
      if (deleted.length < BATCH) break
    }
  }
  return counts
}

/** Runs {@link sweepOAuth} at start and once an hour (server/sweeper.ts). */
export class OAuthSweeper extends Sweeper {
  constructor(options: { db: Db; log: Logger }) {
    super({ what: 'spent OAuth rows', log: options.log, sweep: () => sweepOAuth(options.db) })
  }
}
