import { PRIORITIES, type Priority } from './constants.ts'

/**
 * The EFFECTIVE priority of a card: a card in an on-fire column counts as at least high;
 * its own level comes back when the fire is put out.
 */
export function effectivePriority(own: Priority | null, columnOnFire: boolean): Priority | null {
  if (!columnOnFire) return own
  return own === 'urgent' ? 'urgent' : 'high'
}

/** Sort key: urgent 0 … low 3, untriaged last. */
export function priorityRank(p: Priority | null): number {
  return p === null ? PRIORITIES.length : PRIORITIES.indexOf(p)
}
