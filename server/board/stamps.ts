/**
 * A card's thread, its newest comment and lastCommentBy are ordered by createdAt, which has
 * millisecond resolution: two writes within one millisecond would read in random order. So
 * a comment is stamped strictly after the card's newest one, unless that one is more than a
 * second ahead (a person's skewed clock is not followed).
 */
export function stampAfter(now: string, newest: string | null): string {
  const last = newest === null ? Number.NaN : Date.parse(newest)
  const t = Date.parse(now)
  if (!(last >= t) || last - t >= 1000) return now
  return new Date(last + 1).toISOString()
}
