import { capPixels, type Dimensions, invalid, need, type PixelLimits, u8, u16be } from './bytes.ts'

/**
 * Bytes tolerated after EOI (JPEG and GIF get the weaker check the specification allows:
 * some encoders pad their output). Anything longer is a trailer and refused.
 */
export const STRAY_BYTES = 16

const SOI = 0xd8
const EOI = 0xd9
const SOS = 0xda

/** Start-of-frame markers: every SOFn except DHT (C4), JPG (C8) and DAC (CC). */
function isSof(m: number): boolean {
  return m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc
}

/** Markers that carry a length and are skipped (tables, application data, comments…). */
function isSkippable(m: number): boolean {
  return (
    m === 0xc4 || // DHT
    m === 0xc8 || // JPG
    m === 0xcc || // DAC
    m === 0xdb || // DQT
    m === 0xdc || // DNL
    m === 0xdd || // DRI
    m === 0xde || // DHP
    m === 0xdf || // EXP
    (m >= 0xe0 && m <= 0xef) || // APPn
    (m >= 0xf0 && m <= 0xfd) || // JPGn
    m === 0xfe // COM
  )
}

/**
 * A JPEG, walked marker by marker from SOI to EOI: every segment's length, exactly one
 * frame header with its dimensions and components, scans only after the frame, their
 * entropy-coded data up to the next marker, and at most a few stray bytes after EOI.
 */
export function checkJpeg(b: Uint8Array, limits: PixelLimits): Dimensions {
  let pos = 2
  let width = 0
  let height = 0
  let sawFrame = false
  let scans = 0

  for (;;) {
    if (pos >= b.length) invalid('the file is truncated (it ends before the EOI marker)')
    if (b[pos] !== 0xff) invalid(`a marker is expected at byte ${pos}`)
    while (b[pos] === 0xff) pos++
    if (pos >= b.length) invalid('the file is truncated (it ends inside a marker)')
    const marker = b[pos] as number
    pos++

    if (marker === EOI) {
      if (!sawFrame) invalid('there is no frame header (SOF) before EOI')
      if (scans === 0) invalid('there is no scan (SOS) before EOI')
      const trailing = b.length - pos
      if (trailing > STRAY_BYTES) {
        invalid(
          `${trailing} bytes of trailing data follow EOI; at most ${STRAY_BYTES} stray bytes are tolerated`,
        )
      }
      return { width, height, totalPixels: width * height }
    }
    if (marker === SOI) invalid('a second SOI marker appears inside the image')
    if (marker === 0x00 || (marker >= 0xd0 && marker <= 0xd7)) {
      invalid(`marker 0x${marker.toString(16)} appears outside a scan`)
    }
    if (marker === 0x01) continue // TEM: stands alone

    const length = u16be(b, pos, 'segment length')
    if (length < 2) invalid(`the segment of marker 0x${marker.toString(16)} has length ${length}`)
    need(b, pos, length, `segment of marker 0x${marker.toString(16)}`)
    const seg = pos + 2
    const end = pos + length

    if (isSof(marker)) {
      if (sawFrame) invalid('the image has more than one frame header (SOF)')
      const precision = u8(b, seg, 'frame header')
      height = u16be(b, seg + 1, 'frame header')
      width = u16be(b, seg + 3, 'frame header')
      const components = u8(b, seg + 5, 'frame header')
      if (precision !== 8 && precision !== 12 && precision !== 16) {
        invalid(`the sample precision ${precision} is not 8, 12 or 16`)
      }
      if (width === 0 || height === 0) invalid(`the frame size ${width}×${height} is not allowed`)
      if (components < 1 || components > 4) invalid(`the frame has ${components} components`)
      if (length !== 8 + 3 * components)
        invalid('the frame header length does not match its components')
      for (let i = 0; i < components; i++) {
        const sampling = b[seg + 7 + 3 * i] as number
        const h = sampling >> 4
        const v = sampling & 0x0f
        if (h < 1 || h > 4 || v < 1 || v > 4) invalid('a component has invalid sampling factors')
        if ((b[seg + 8 + 3 * i] as number) > 3)
          invalid('a component names a missing quantisation table')
      }
      // The cap comes first: nothing below looks at pixel data of a bomb.
      capPixels(width, height, limits, 'the image')
      sawFrame = true
      pos = end
      continue
    }
    if (marker === SOS) {
      if (!sawFrame) invalid('a scan (SOS) comes before the frame header (SOF)')
      const count = u8(b, seg, 'scan header')
      if (count < 1 || count > 4 || length !== 6 + 2 * count)
        invalid('the scan header is malformed')
      pos = skipEntropyData(b, end)
      scans++
      continue
    }
    if (marker === 0xdd && length !== 4) invalid('the restart interval (DRI) segment is malformed')
    if (!isSkippable(marker)) invalid(`unknown marker 0x${marker.toString(16)}`)
    pos = end
  }
}

/**
 * Skips entropy-coded data: it runs until a 0xFF that is neither a stuffed zero nor a
 * restart marker. Returns the offset of that 0xFF.
 */
function skipEntropyData(b: Uint8Array, from: number): number {
  let pos = from
  for (;;) {
    pos = b.indexOf(0xff, pos)
    if (pos < 0 || pos + 1 >= b.length) {
      invalid('the file is truncated (it ends inside the image data)')
    }
    const next = b[pos + 1] as number
    if (next === 0x00 || (next >= 0xd0 && next <= 0xd7)) pos += 2
    else if (next === 0xff) pos += 1
    else return pos
  }
}
