import type { Db, Queryable } from '../../persistence/types.ts'

/** Who may fetch a file: anyone (node images) or only a signed link's holder (screenshots). */
export type FileVisibility = 'public' | 'private'

export interface FileMeta {
  id: string
  orgId: string
  visibility: FileVisibility
  mimeType: string
  /** Taken from the proved format, never from anything the caller declared. */
  extension: string
  size: number
  sha256: string
  createdAt: string
}

export interface StoredFile extends FileMeta {
  bytes: Uint8Array
}

/**
 * Where file bytes live. Postgres by default, so every server process shares them; a
 * filesystem or object store can implement the same three calls later. `tx`, when given,
 * is the write's transaction: a store inside Postgres commits the file with the change
 * that refers to it; a store outside it ignores `tx` (and may leave an orphan if that
 * transaction then fails, never a dangling reference).
 */
export interface FileStore {
  put(file: StoredFile, tx?: Queryable): Promise<void>
  /** The file of that organisation, or undefined: another organisation's id looks missing. */
  get(orgId: string, id: string): Promise<StoredFile | undefined>
  delete(orgId: string, id: string, tx?: Queryable): Promise<boolean>
}

interface FileRow {
  id: string
  org_id: string
  visibility: FileVisibility
  mime_type: string
  extension: string
  size: number
  sha256: string
  /** base64, possibly with line breaks (Postgres's encode); Buffer.from skips them. */
  data64: string
  created_at: Date
}

/** The default store: the `files` table. */
export class PostgresFileStore implements FileStore {
  private readonly db: Queryable

  constructor(db: Queryable) {
    this.db = db
  }

  async put(file: StoredFile, tx: Queryable = this.db): Promise<void> {
    await tx.query(
      // Bytes travel as base64 text and are decoded in the database: binary parameters cost
      // PGlite ~0.4 s per megabyte, base64 ~20 ms (and Postgres the same either way).
      `insert into files (id, org_id, visibility, mime_type, extension, size, sha256, data, created_at)
       values ($1, $2, $3, $4, $5, $6, $7, decode($8, 'base64'), $9)`,
      [
        file.id,
        file.orgId,
        file.visibility,
        file.mimeType,
        file.extension,
        file.size,
        file.sha256,
        Buffer.from(file.bytes.buffer, file.bytes.byteOffset, file.bytes.byteLength).toString(
          'base64',
        ),
        file.createdAt,
      ],
    )
  }

  async get(orgId: string, id: string): Promise<StoredFile | undefined> {
    const [row] = await this.db.query<FileRow & Record<string, unknown>>(
      `select id, org_id, visibility, mime_type, extension, size, sha256,
              encode(data, 'base64') as data64, created_at
         from files where id = $1 and org_id = $2`,
      [id, orgId],
    )
    if (!row) return undefined
    return {
      id: row.id,
      orgId: row.org_id,
      visibility: row.visibility,
      mimeType: row.mime_type,
      extension: row.extension,
      size: row.size,
      sha256: row.sha256,
      createdAt: row.created_at.toISOString(),
      bytes: Buffer.from(row.data64, 'base64'),
    }
  }

  async delete(orgId: string, id: string, tx: Queryable = this.db): Promise<boolean> {
    const rows = await tx.query('delete from files where id = $1 and org_id = $2 returning id', [
      id,
      orgId,
    ])
    return rows.length > 0
  }
}

const stores = new WeakMap<Db, FileStore>()

/** The file store of a database (one per Db, so every caller shares it). */
export function fileStore(db: Db): FileStore {
  let store = stores.get(db)
  if (!store) {
    store = new PostgresFileStore(db)
    stores.set(db, store)
  }
  return store
}
