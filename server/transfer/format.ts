/**
 * The export archive's format (docs/export.md): a gzipped ustar of JSON Lines parts, the
 * stored files' bytes and, last, manifest.json. Everything an organisation holds, in the
 * order an import needs it.
 */

export const FORMAT = 'corkboard-export'
export const FORMAT_VERSION = 1

/**
 * The JSON Lines kinds, in archive order; each is written as parts `<kind>/NNNNNN.jsonl`
 * (a part closes at PART_BYTES), so neither side holds more than one part.
 */
export const KINDS = [
  'members',
  'api-keys',
  'columns',
  'projects',
  'cards',
  'archived',
  'claims',
  'maps',
  'webhooks',
  'file-records',
] as const
export type Kind = (typeof KINDS)[number]

/** A part closes once it holds this many bytes. */
export const PART_BYTES = 4 * 1024 * 1024

/** The largest entry an import reads (a part, a stored file): anything larger is not ours. */
export const MAX_ENTRY_BYTES = 64 * 1024 * 1024

export const ORG_ENTRY = 'organization.json'
export const BOARD_ENTRY = 'board.json'
export const MANIFEST_ENTRY = 'manifest.json'

export function partName(kind: Kind, index: number): string {
  return `${kind}/${String(index).padStart(6, '0')}.jsonl`
}

const PART = /^([a-z-]+)\/(\d{6})\.jsonl$/
const FILE = /^files\/([0-9a-f-]{36})\.([a-z0-9]{1,10})$/

export type EntryRef =
  | { type: 'org' }
  | { type: 'board' }
  | { type: 'manifest' }
  | { type: 'part'; kind: Kind; index: number }
  | { type: 'file'; id: string; extension: string }

/** What an entry name names, or undefined for a name the format does not have. */
export function parseEntryName(name: string): EntryRef | undefined {
  if (name === ORG_ENTRY) return { type: 'org' }
  if (name === BOARD_ENTRY) return { type: 'board' }
  if (name === MANIFEST_ENTRY) return { type: 'manifest' }
  const part = PART.exec(name)
  if (part && (KINDS as readonly string[]).includes(part[1] as string)) {
    return { type: 'part', kind: part[1] as Kind, index: Number(part[2]) }
  }
  const file = FILE.exec(name)
  if (file) return { type: 'file', id: file[1] as string, extension: file[2] as string }
  return undefined
}

/** manifest.json: what the archive holds, and each entry's size and SHA-256. */
export interface Manifest {
  format: typeof FORMAT
  version: number
  orgId: string
  exportedAt: string
  counts: Record<string, number>
  entries: { name: string; size: number; sha256: string }[]
}

/** organization.json */
export interface OrgEntry {
  format: typeof FORMAT
  version: number
  id: string
  name: string
  createdAt: string
  exportedAt: string
}

/** A timestamp column as text, to the microsecond, in UTC (SQL). */
export function tsSql(column: string): string {
  return `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
}

/** A timestamp read with tsSql: as JavaScript writes it when its microseconds are zero. */
export function tsText(value: string | null): string | null {
  return value === null ? null : value.replace(/(\.\d{3})000Z$/, '$1Z')
}
