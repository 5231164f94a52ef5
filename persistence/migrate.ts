import { readdir, readFile } from 'node:fs/promises'
import type { Db } from './db.ts'

const folder = new URL('./migrations/', import.meta.url)

/**
 * Applies every migration in `persistence/migrations` not yet recorded, in file-name
 * order, each in its own transaction. An advisory lock keeps two processes starting
 * together from applying the same file twice.
 */
export async function migrate(db: Db): Promise<string[]> {
  const files = (await readdir(folder)).filter((f) => f.endsWith('.sql')).sort()
  await db.query(
    'create table if not exists schema_migrations (name text primary key, applied_at timestamptz not null default now())',
  )
  const applied: string[] = []
  await db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock(7301)')
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

/** Migrations are plain statements separated by semicolons at line ends; no functions. */
function splitStatements(text: string): string[] {
  return text
    .split(/;\s*$/m)
    .map((s) =>
      s
        .split('\n')
        .filter((line) => !line.trim().startsWith('--'))
        .join('\n')
        .trim(),
    )
    .filter((s) => s.length > 0)
}
