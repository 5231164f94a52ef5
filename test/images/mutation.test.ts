import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { validateImage } from '../../server/images/validate.ts'
import { decodesAsPng, gif, jpeg, type PngOptions, png, webp } from './fixtures.ts'

/**
 * Property tests over mutated images: the validator never throws on any bytes, and never
 * accepts a PNG that an independent decoder (zlib's CRC and inflate, in fixtures.ts)
 * finds broken. Mutations are what corruption and truncation look like on the wire.
 */

type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'set'; at: number; value: number }
  | { kind: 'insert'; at: number; bytes: number[] }
  | { kind: 'delete'; at: number; count: number }
  | { kind: 'overwrite'; at: number; bytes: number[] }
  | { kind: 'truncate'; at: number }
  | { kind: 'append'; bytes: number[] }

const position = fc.nat({ max: 1 << 20 })
const someBytes = (max: number) =>
  fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: max })

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({
    kind: fc.constant('flip' as const),
    at: position,
    bit: fc.integer({ min: 0, max: 7 }),
  }),
  fc.record({
    kind: fc.constant('set' as const),
    at: position,
    value: fc.integer({ min: 0, max: 255 }),
  }),
  fc.record({ kind: fc.constant('insert' as const), at: position, bytes: someBytes(4) }),
  fc.record({
    kind: fc.constant('delete' as const),
    at: position,
    count: fc.integer({ min: 1, max: 8 }),
  }),
  fc.record({ kind: fc.constant('overwrite' as const), at: position, bytes: someBytes(8) }),
  fc.record({ kind: fc.constant('truncate' as const), at: position }),
  fc.record({ kind: fc.constant('append' as const), bytes: someBytes(16) }),
)

function mutate(b: Uint8Array, mutations: readonly Mutation[]): Uint8Array {
  let out = b.slice()
  for (const m of mutations) {
    const at = out.length === 0 ? 0 : ('at' in m ? m.at : 0) % out.length
    switch (m.kind) {
      case 'flip':
        if (out.length > 0) out[at] = (out[at] as number) ^ (1 << m.bit)
        break
      case 'set':
        if (out.length > 0) out[at] = m.value
        break
      case 'insert':
        out = Uint8Array.from([...out.subarray(0, at), ...m.bytes, ...out.subarray(at)])
        break
      case 'delete':
        out = Uint8Array.from([...out.subarray(0, at), ...out.subarray(at + m.count)])
        break
      case 'overwrite':
        out = out.slice()
        out.set(m.bytes.slice(0, out.length - at), at)
        break
      case 'truncate':
        out = out.slice(0, at)
        break
      case 'append':
        out = Uint8Array.from([...out, ...m.bytes])
        break
      default:
        m satisfies never
    }
  }
  return out
}

/** A pool of varied valid PNGs (every colour type, sizes, split IDATs, ancillary chunks). */
function pngPool(): Uint8Array[] {
  const combos: Pick<PngOptions, 'colorType' | 'bitDepth'>[] = [
    { colorType: 0, bitDepth: 1 },
    { colorType: 0, bitDepth: 8 },
    { colorType: 0, bitDepth: 16 },
    { colorType: 2, bitDepth: 8 },
    { colorType: 3, bitDepth: 2 },
    { colorType: 3, bitDepth: 8 },
    { colorType: 4, bitDepth: 8 },
    { colorType: 6, bitDepth: 8 },
    { colorType: 6, bitDepth: 16 },
  ]
  const pool: Uint8Array[] = []
  for (let i = 0; i < 90; i++) {
    const combo = combos[i % combos.length] as PngOptions
    pool.push(
      png({
        ...combo,
        width: 1 + ((i * 7) % 13),
        height: 1 + ((i * 5) % 11),
        seed: i + 1,
        idatChunks: 1 + (i % 3),
        extra: i % 4 === 0 ? [['tEXt', [...Buffer.from(`Title\0image ${i}`)]]] : [],
      }),
    )
  }
  return pool
}

describe('image validation under mutation', () => {
  const pool = pngPool()

  test('every PNG of the pool is valid to both the validator and the independent decoder', () => {
    for (const b of pool) {
      expect(validateImage(b).ok).toBe(true)
      expect(decodesAsPng(b)).toBe(true)
    }
  })

  test('100,000 mutated PNGs: the validator never throws and never accepts a PNG the decoder refuses', () => {
    let accepted = 0
    fc.assert(
      fc.property(
        fc.constantFrom(...pool),
        fc.array(mutation, { minLength: 1, maxLength: 3 }),
        (original, mutations) => {
          const bytes = mutate(original, mutations)
          const result = validateImage(bytes)
          if (result.ok) {
            accepted++
            expect(decodesAsPng(bytes)).toBe(true)
          }
        },
      ),
      { numRuns: 100_000 },
    )
    // Only mutations that changed nothing (a bit set to itself, say) can be accepted.
    expect(accepted).toBeLessThan(10_000)
  })

  test.each([
    ['JPEG', jpeg({ width: 40, height: 24, comment: 'x' })],
    ['WebP (lossless)', webp.lossless()],
    ['WebP (animated)', webp.animated()],
    ['GIF', gif({ frames: 2, width: 12, height: 7 })],
  ])('20,000 mutated %s files never make the validator throw', (_, original) => {
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 3 }), (mutations) => {
        const result = validateImage(mutate(original, mutations))
        if (result.ok) expect(['jpeg', 'webp', 'gif', 'png']).toContain(result.image.format)
        else expect(result.reason.length).toBeGreaterThan(0)
      }),
      { numRuns: 20_000 },
    )
  })

  test('arbitrary bytes behind each signature never make the validator throw', () => {
    const heads = [
      [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
      [0xff, 0xd8, 0xff],
      [...Buffer.from('RIFF'), 0, 0, 0, 0, ...Buffer.from('WEBP')],
      [...Buffer.from('GIF89a')],
    ]
    fc.assert(
      fc.property(fc.constantFrom(...heads), fc.uint8Array({ maxLength: 200 }), (head, tail) => {
        validateImage(Uint8Array.from([...head, ...tail]))
      }),
      { numRuns: 20_000 },
    )
  })
})
