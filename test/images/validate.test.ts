import { describe, expect, test } from 'vitest'
import { DEFAULT_IMAGE_LIMITS, validateImage } from '../../server/images/validate.ts'
import {
  append,
  findChunk,
  gif,
  gifWithScreen,
  jpeg,
  jpegWithSize,
  PNG_SIGNATURE,
  png,
  pngBomb,
  pngChunk,
  pngWithBadCrc,
  pngWithoutIend,
  riff,
  riffChunk,
  truncate,
  vp8x,
  webp,
  webpWithRiffSize,
} from './fixtures.ts'

const accepted = (b: Uint8Array) => {
  const r = validateImage(b)
  if (!r.ok) throw new Error(`refused: ${r.reason}`)
  return r.image
}
const refusal = (b: Uint8Array) => {
  const r = validateImage(b)
  if (r.ok) throw new Error(`accepted ${JSON.stringify(r.image)}`)
  return r.reason
}

const VALID = {
  'PNG (RGBA)': { bytes: png(), format: 'png', mimeType: 'image/png', size: [4, 3] },
  'PNG (indexed, 4-bit)': {
    bytes: png({ colorType: 3, bitDepth: 4, width: 9, height: 5 }),
    format: 'png',
    mimeType: 'image/png',
    size: [9, 5],
  },
  'PNG (grey 16-bit, text chunks, split IDAT)': {
    bytes: png({
      colorType: 0,
      bitDepth: 16,
      width: 7,
      height: 6,
      idatChunks: 3,
      extra: [['tEXt', [...Buffer.from('Comment\0hi')]]],
    }),
    format: 'png',
    mimeType: 'image/png',
    size: [7, 6],
  },
  JPEG: {
    bytes: jpeg({ width: 100, height: 60 }),
    format: 'jpeg',
    mimeType: 'image/jpeg',
    size: [100, 60],
  },
  'JPEG with a comment': {
    bytes: jpeg({ comment: 'made by a test' }),
    format: 'jpeg',
    mimeType: 'image/jpeg',
    size: [16, 8],
  },
  'WebP (lossless)': {
    bytes: webp.lossless(),
    format: 'webp',
    mimeType: 'image/webp',
    size: [1, 1],
  },
  'WebP (lossy)': { bytes: webp.lossy(), format: 'webp', mimeType: 'image/webp', size: [1, 1] },
  'WebP (extended, alpha)': {
    bytes: webp.alpha(),
    format: 'webp',
    mimeType: 'image/webp',
    size: [1, 1],
  },
  'WebP (animated)': {
    bytes: webp.animated(),
    format: 'webp',
    mimeType: 'image/webp',
    size: [1, 1],
  },
  GIF: { bytes: gif(), format: 'gif', mimeType: 'image/gif', size: [5, 4] },
  'GIF (animated)': {
    bytes: gif({ frames: 3, width: 40, height: 30 }),
    format: 'gif',
    mimeType: 'image/gif',
    size: [40, 30],
  },
} as const

describe('image validation: valid files of each format', () => {
  test.each(Object.entries(VALID))(
    '%s is accepted, its format and size proved from the bytes',
    (_, v) => {
      const image = accepted(v.bytes)
      expect(image.format).toBe(v.format)
      expect(image.mimeType).toBe(v.mimeType)
      expect([image.width, image.height]).toEqual(v.size)
    },
  )

  test.each(Object.entries(VALID))('every truncation of %s is refused', (_, v) => {
    for (let keep = 0; keep < v.bytes.length; keep++) {
      const r = validateImage(truncate(v.bytes, keep))
      expect(r.ok, `kept ${keep} of ${v.bytes.length} bytes`).toBe(false)
    }
  })
})

describe('image validation: the format is proved from the bytes', () => {
  test('bytes with no known signature are refused', () => {
    expect(refusal(new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toMatch(
      /not a PNG, JPEG, WebP or GIF/,
    )
  })

  test('an empty image is refused', () => {
    expect(refusal(new Uint8Array())).toMatch(/empty/)
  })

  test('a PNG signature in front of JPEG bytes is refused', () => {
    expect(refusal(Uint8Array.from([...PNG_SIGNATURE, ...jpeg().subarray(2)]))).toMatch(/PNG/)
  })

  test('a GIF header in front of PNG bytes is refused', () => {
    const b = png()
    b.set([...Buffer.from('GIF89a')], 0)
    expect(refusal(b)).toMatch(/GIF/)
  })

  test('an image over 3 MB decoded is refused, whatever it is', () => {
    const big = png({
      width: 8,
      height: 8,
      extra: [['tEXt', new Array(DEFAULT_IMAGE_LIMITS.maxBytes).fill(65)]],
    })
    expect(refusal(big)).toMatch(/limit is 3,145,728 bytes/)
  })
})

describe('image validation: PNG', () => {
  test('a bad CRC is refused', () => {
    expect(refusal(pngWithBadCrc())).toMatch(/CRC of chunk IDAT/)
  })

  test('a missing IEND is refused as truncated', () => {
    expect(refusal(pngWithoutIend())).toMatch(/truncated.*IEND/)
  })

  test('trailing bytes after IEND are refused, even one', () => {
    expect(refusal(append(png(), [0]))).toMatch(/1 bytes of trailing data follow IEND/)
    expect(refusal(append(png(), [...Buffer.from('PK\x03\x04 a zip file')]))).toMatch(/trailing/)
  })

  test('IHDR must come first', () => {
    const b = png()
    const ihdr = b.subarray(8, 8 + 25)
    const text = pngChunk('tEXt', [...Buffer.from('a\0b')])
    expect(
      refusal(Uint8Array.from([...PNG_SIGNATURE, ...text, ...ihdr, ...b.subarray(33)])),
    ).toMatch(/first chunk is not IHDR/)
  })

  test('an unknown critical chunk is refused, an unknown ancillary one is not', () => {
    const withChunk = (type: string) => {
      const b = png()
      const at = findChunk(b, 'IDAT')
      return Uint8Array.from([
        ...b.subarray(0, at),
        ...pngChunk(type, [1, 2, 3]),
        ...b.subarray(at),
      ])
    }
    expect(refusal(withChunk('ABCD'))).toMatch(/unknown critical chunk ABCD/)
    expect(accepted(withChunk('abCd')).format).toBe('png')
  })

  test('an indexed image without PLTE is refused', () => {
    const b = png({ colorType: 3, bitDepth: 8 })
    const at = findChunk(b, 'PLTE')
    const length = new DataView(b.buffer).getUint32(at)
    expect(
      refusal(Uint8Array.from([...b.subarray(0, at), ...b.subarray(at + 12 + length)])),
    ).toMatch(/PLTE/)
  })

  test('a bit depth the colour type does not allow is refused', () => {
    expect(refusal(png({ colorType: 2, bitDepth: 4 }))).toMatch(/bit depth 4/)
  })

  test('IDAT that is not a zlib stream is refused', () => {
    const ihdr = [0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0]
    const b = Uint8Array.from([
      ...PNG_SIGNATURE,
      ...pngChunk('IHDR', ihdr),
      ...pngChunk('IDAT', [1, 2, 3, 4, 5, 6, 7, 8, 9]),
      ...pngChunk('IEND'),
    ])
    expect(refusal(b)).toMatch(/zlib header/)
  })

  test('a decompression-bomb header (100,000 × 100,000) is refused from IHDR alone', () => {
    expect(refusal(pngBomb())).toMatch(
      /100000×100000 = 10,000,000,000 pixels; the limit is 50,000,000/,
    )
  })

  test('an image at the pixel cap is accepted, one row more is refused', () => {
    expect(accepted(pngBomb(10_000, 5_000)).width).toBe(10_000)
    expect(refusal(pngBomb(10_000, 5_001))).toMatch(/pixels/)
  })
})

describe('image validation: JPEG', () => {
  test('a few stray bytes after EOI are tolerated', () => {
    expect(accepted(append(jpeg(), new Array(16).fill(0))).format).toBe('jpeg')
    expect(accepted(append(jpeg(), [0x0a])).format).toBe('jpeg')
  })

  test('a JPEG with a trailer (more than a few bytes after EOI) is refused', () => {
    expect(refusal(append(jpeg(), new Array(17).fill(0)))).toMatch(/17 bytes of trailing data/)
    expect(refusal(append(jpeg(), [...png()]))).toMatch(/trailing data follow EOI/)
  })

  test('a JPEG without EOI is refused', () => {
    expect(refusal(jpeg().slice(0, -2))).toMatch(/truncated/)
  })

  test('a segment length running past the end is refused', () => {
    const b = jpeg()
    b[4] = 0xff // APP0 length high byte
    expect(refusal(b)).toMatch(/truncated/)
  })

  test('a scan before the frame header is refused', () => {
    const b = jpeg()
    const sof = b.findIndex((v, i) => v === 0xff && b[i + 1] === 0xc0)
    b[sof + 1] = 0xe5 // the frame header becomes an application segment
    expect(refusal(b)).toMatch(/SOS\) comes before the frame header/)
  })

  test('a frame of height 0 is refused', () => {
    expect(refusal(jpegWithSize(8, 0))).toMatch(/frame size 8×0/)
  })

  test('a decompression-bomb header (65,535 × 65,535) is refused from SOF alone', () => {
    expect(refusal(jpegWithSize(65_535, 65_535))).toMatch(/4,294,836,225 pixels/)
  })
})

describe('image validation: WebP', () => {
  test('a RIFF size larger than the file is refused as truncated', () => {
    expect(refusal(webpWithRiffSize(webp.lossless(), 2))).toMatch(/truncated \(RIFF declares/)
  })

  test('a RIFF size smaller than the file (trailing data) is refused', () => {
    expect(refusal(webpWithRiffSize(webp.lossless(), -2))).toMatch(/trailing data/)
    expect(refusal(append(webp.lossy(), [0, 0]))).toMatch(/2 bytes of trailing data/)
  })

  test('a WebP whose first chunk is not VP8, VP8L or VP8X is refused', () => {
    expect(refusal(riff([riffChunk('EXIF', [1, 2])]))).toMatch(/not VP8, VP8L or VP8X/)
  })

  test('a VP8 frame without its start code is refused', () => {
    const b = webp.lossy()
    b[23] = 0
    expect(refusal(b)).toMatch(/start code/)
  })

  test('a VP8L header with the wrong signature is refused', () => {
    const b = webp.lossless()
    b[20] = 0x2e
    expect(refusal(b)).toMatch(/VP8L signature/)
  })

  test('a VP8X canvas that disagrees with the bitstream is refused', () => {
    expect(refusal(webp.canvas(2, 1))).toMatch(/bitstream is 1×1 but VP8X declares 2×1/)
  })

  test('an extended WebP without image data is refused', () => {
    expect(refusal(riff([riffChunk('VP8X', vp8x(0, 1, 1))]))).toMatch(/0 VP8\/VP8L chunks/)
  })

  test('a decompression-bomb canvas is refused from VP8X alone', () => {
    expect(refusal(webp.canvas(16_000_000, 16_000_000))).toMatch(/canvas is 16000000×16000000/)
  })
})

describe('image validation: GIF', () => {
  test('a GIF without its trailer is refused', () => {
    expect(refusal(gif().slice(0, -1))).toMatch(/truncated \(it ends before the trailer\)/)
  })

  test('a few stray bytes after the trailer are tolerated, a trailer of data is not', () => {
    expect(accepted(append(gif(), [0, 0, 0])).format).toBe('gif')
    expect(refusal(append(gif(), new Array(40).fill(1)))).toMatch(/40 bytes of trailing data/)
  })

  test('an unknown block is refused', () => {
    const b = gif()
    b[b.length - 1] = 0x99
    expect(refusal(b)).toMatch(/unknown block 0x99/)
  })

  test('a GIF with no image is refused', () => {
    const b = gif()
    expect(refusal(Uint8Array.from([...b.subarray(0, 13 + 12), 0x3b]))).toMatch(/no image/)
  })

  test('a decompression-bomb logical screen is refused from the header alone', () => {
    expect(refusal(gifWithScreen(65_535, 65_535))).toMatch(/4,294,836,225 pixels/)
  })

  test('thousands of full-size frames are refused by the cap over all frames', () => {
    const limits = { ...DEFAULT_IMAGE_LIMITS, maxPixels: 100, maxTotalPixels: 150 }
    const r = validateImage(gif({ frames: 8, width: 5, height: 4 }), limits)
    expect(r).toMatchObject({ ok: false, reason: expect.stringMatching(/over all frames/) })
  })
})
