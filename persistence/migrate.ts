import { readdir, readFile } from 'node:fs/promises'
import type { Db } from './types.ts'

const folder = new URL('./migrations/', import.meta.url)

/**
 * Applies every migration in `persistence/migrations` not yet recorded, in file-name
 * order (up to `upTo` inclusive: tests build older layouts), in one transaction. An advisory lock keeps two processes starting
 * together from applying the same file twice.
 */
export async function migrate(db: Db, options: { upTo?: string } = {}): Promise<string[]> {
  const upTo = options.upTo
  const files = (await readdir(folder))
    .filter((f) => f.endsWith('.sql') && (upTo === undefined || f <= upTo))
    .sort()
  const applied: string[] = []
  await db.transaction(async (tx) => {
    // The lock comes first: even "create table if not exists" races between processes.
    await tx.query('select pg_advisory_xact_lock(7301)')
    await tx.query(
      'create table if not exists schema_migrations (name text primary key, applied_at timestamptz not null default now())',
    )
    const done = new Set(
      (await tx.query<{ name: string }>('select name from schema_migrations')).map((r) => r.name),
    )
    for (const file of files) {
      if (done.has(file)) continue
      const text = await readFile(new URL(file, folder), 'utf8')
      for (const statement of splitStatements(text)) await tx.query(statement)
      await tx.query('insert into schema_migrations (name) values ($1)', [file])
      applied.push(file)
    }
  })
  return applied
}

/**
 * Splits a migration into statements at semicolons that end a line, except inside `$$`
 * bodies (functions); `--` comment lines are dropped.
 */
export function splitStatements(text: string): string[] {
  const statements: string[] = []
  let current: string[] = []
  let inBody = false
  for (const line of text.split('\n')) {
    if (!inBody && line.trim().startsWith('--')) continue
    current.push(line)
    if ((line.match(/\$\$/g)?.length ?? 0) % 2 === 1) inBody = !inBody
    if (!inBody && /;\s*$/.test(line)) {
      statements.push(current.join('\n').trim().replace(/;$/, ''))
      current = []
    }
  }
  const rest = current.join('\n').trim()
  if (rest) statements.push(rest)
  return statements.filter((s) => s.length > 0)
}
