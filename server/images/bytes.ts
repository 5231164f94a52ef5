/**
 * Bounds-checked reading for the image checkers. Every read that would run past the end
 * reports the file as truncated instead of yielding `undefined`, so no checker can be
 * tricked into reading garbage, and nothing here throws anything but `InvalidImage`.
 */

/** Why bytes are not an acceptable image; the message is written for the caller to read. */
export class InvalidImage extends Error {}

export function invalid(reason: string): never {
  throw new InvalidImage(reason)
}

export function need(b: Uint8Array, offset: number, count: number, what: string): void {
  if (offset < 0 || count < 0 || offset + count > b.length) {
    invalid(`the file is truncated (it ends inside the ${what})`)
  }
}

export function u8(b: Uint8Array, at: number, what: string): number {
  need(b, at, 1, what)
  return b[at] as number
}

export function u16be(b: Uint8Array, at: number, what: string): number {
  need(b, at, 2, what)
  return ((b[at] as number) << 8) | (b[at + 1] as number)
}

export function u16le(b: Uint8Array, at: number, what: string): number {
  need(b, at, 2, what)
  return (b[at] as number) | ((b[at + 1] as number) << 8)
}

export function u24le(b: Uint8Array, at: number, what: string): number {
  need(b, at, 3, what)
  return (b[at] as number) | ((b[at + 1] as number) << 8) | ((b[at + 2] as number) << 16)
}

export function u32be(b: Uint8Array, at: number, what: string): number {
  need(b, at, 4, what)
  return (
    (b[at] as number) * 0x1000000 +
    (((b[at + 1] as number) << 16) | ((b[at + 2] as number) << 8) | (b[at + 3] as number))
  )
}

export function u32le(b: Uint8Array, at: number, what: string): number {
  need(b, at, 4, what)
  return (
    (b[at + 3] as number) * 0x1000000 +
    (((b[at + 2] as number) << 16) | ((b[at + 1] as number) << 8) | (b[at] as number))
  )
}

/** Four bytes as text, for chunk names in messages (non-printable bytes shown as `?`). */
export function fourcc(b: Uint8Array, at: number): string {
  let s = ''
  for (let i = at; i < at + 4 && i < b.length; i++) {
    const c = b[i] as number
    s += c >= 0x20 && c < 0x7f ? String.fromCharCode(c) : '?'
  }
  return s
}

export function startsWith(b: Uint8Array, at: number, expected: readonly number[]): boolean {
  if (at + expected.length > b.length) return false
  for (let i = 0; i < expected.length; i++) if (b[at + i] !== expected[i]) return false
  return true
}

export const ascii = (s: string): number[] => [...s].map((c) => c.charCodeAt(0))

/** Dimensions every checker reports; the caps are applied by the caller. */
export interface Dimensions {
  width: number
  height: number
  /** Pixels over every frame (animations), so a thousand-frame bomb is caught too. */
  totalPixels: number
}

/** Caps applied from the headers, before anything looks at the pixels. */
export interface PixelLimits {
  /** Largest width × height of the image (and of any one frame). */
  maxPixels: number
  /** Largest sum of width × height over all frames of an animation. */
  maxTotalPixels: number
}

export function capPixels(width: number, height: number, limits: PixelLimits, what: string) {
  const pixels = width * height
  if (pixels > limits.maxPixels) {
    invalid(
      `${what} is ${width}×${height} = ${pixels.toLocaleString('en')} pixels; the limit is ${limits.maxPixels.toLocaleString('en')} pixels`,
    )
  }
  return pixels
}

export function capTotal(total: number, limits: PixelLimits): void {
  if (total > limits.maxTotalPixels) {
    invalid(
      `its frames add up to ${total.toLocaleString('en')} pixels; the limit over all frames is ${limits.maxTotalPixels.toLocaleString('en')} pixels`,
    )
  }
}
