import { ApiError } from '../errors.ts'

/**
 * The archive's container: POSIX ustar (what `tar` reads everywhere), gzipped by the
 * caller. Only what the export writes is read back: regular files with names under 100
 * bytes. Written and read entry by entry, so neither side holds more than one file.
 */

const BLOCK = 512

/** The header block of a regular file `name` of `size` bytes. */
export function tarHeader(name: string, size: number, mtime: Date): Buffer {
  const nameBytes = Buffer.from(name, 'utf8')
  if (nameBytes.length >= 100) throw new Error(`tar entry name too long: ${name}`)
  const h = Buffer.alloc(BLOCK, 0)
  nameBytes.copy(h, 0)
  octal(h, 100, 8, 0o644)
  octal(h, 108, 8, 0)
  octal(h, 116, 8, 0)
  octal(h, 124, 12, size)
  octal(h, 136, 12, Math.floor(mtime.getTime() / 1000))
  h.fill(0x20, 148, 156)
  h[156] = 0x30 // '0': a regular file
  h.write('ustar\u000000', 257, 'latin1')
  octal(h, 148, 8, checksum(h))
  return h
}

/** Zeros that pad a file of `size` bytes to a whole block. */
export function tarPadding(size: number): Buffer {
  const rest = size % BLOCK
  return Buffer.alloc(rest === 0 ? 0 : BLOCK - rest, 0)
}

/** The two zero blocks that end an archive. */
export const TAR_END = Buffer.alloc(BLOCK * 2, 0)

function octal(h: Buffer, at: number, width: number, value: number): void {
  h.write(`${value.toString(8).padStart(width - 1, '0')}\u0000`, at, width, 'latin1')
}

function checksum(h: Buffer): number {
  let sum = 0
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (h[i] as number)
  return sum
}

/** One entry as it is read: its name and bytes, delivered in chunks. */
export interface TarEntry {
  name: string
  size: number
}

/** What reading an archive does with each entry: `chunk` per piece of it, `end` after. */
export interface TarVisitor {
  start(entry: TarEntry): void | Promise<void>
  chunk(data: Buffer): void | Promise<void>
  end(): void | Promise<void>
}

/** A bad archive: 400 naming what is wrong. */
export function badArchive(what: string): ApiError {
  return new ApiError(400, `The archive is not a Corkboard export: ${what}`)
}

/**
 * Reads a (gunzipped) ustar stream entry by entry. Refuses what is not a regular file, a
 * header whose checksum is wrong, and a stream that ends before its end blocks.
 */
export async function readTar(source: AsyncIterable<Buffer>, visit: TarVisitor): Promise<void> {
  let pending: Buffer = Buffer.alloc(0)
  let state: 'header' | 'body' | 'padding' | 'done' = 'header'
  let remaining = 0
  let padding = 0
  for await (const piece of source) {
    pending = pending.length === 0 ? piece : Buffer.concat([pending, piece])
    while (state !== 'done') {
      if (state === 'header') {
        if (pending.length < BLOCK) break
        const h = pending.subarray(0, BLOCK)
        pending = pending.subarray(BLOCK)
        if (h.every((b) => b === 0)) {
          state = 'done'
          break
        }
        const sum = Number.parseInt(h.toString('latin1', 148, 156).replace(/\0.*$/, ''), 8)
        if (sum !== checksum(h)) throw badArchive('a tar header is damaged (checksum)')
        const type = String.fromCharCode(h[156] as number)
        if (type !== '0' && type !== '\u0000') {
          throw badArchive(`entry of tar type ${JSON.stringify(type)} (only files are read)`)
        }
        const name = h.toString('utf8', 0, 100).replace(/\0.*$/s, '')
        const size = Number.parseInt(h.toString('latin1', 124, 136).replace(/\0.*$/, ''), 8)
        if (!Number.isSafeInteger(size) || size < 0) throw badArchive(`entry ${name} has no size`)
        await visit.start({ name, size })
        remaining = size
        padding = tarPadding(size).length
        state = 'body'
      }
      if (state === 'body') {
        if (remaining > 0) {
          if (pending.length === 0) break
          const take = Math.min(remaining, pending.length)
          await visit.chunk(pending.subarray(0, take))
          pending = pending.subarray(take)
          remaining -= take
          if (remaining > 0) break
        }
        await visit.end()
        state = 'padding'
      }
      if (state === 'padding') {
        const take = Math.min(padding, pending.length)
        pending = pending.subarray(take)
        padding -= take
        if (padding > 0) break
        state = 'header'
      }
    }
  }
  if (state !== 'done') throw badArchive('it ends early (truncated)')
}
