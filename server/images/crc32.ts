/** CRC-32 (ISO 3309, as PNG uses it), table-driven. */
const TABLE = (() => {
  const t = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    t[n] = c >>> 0
  }
  return t
})()

/** CRC of `b[start, end)`, as an unsigned 32-bit number. */
export function crc32(b: Uint8Array, start = 0, end = b.length): number {
  let c = 0xffffffff
  for (let i = start; i < end; i++) c = (TABLE[(c ^ (b[i] as number)) & 0xff] as number) ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}
