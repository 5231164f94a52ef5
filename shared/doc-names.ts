/**
 * Live document names (docs/design.md, Contract 3). Programs outside this repository open
 * documents by these names, so they never change:
 * - `<orgId>/board`: what is on the organisation's board;
 * - `<orgId>/tasks/<taskId>`: one card's comments and screenshots;
 * - `<orgId>/maps/<mapId>`: one mind map.
 */

import { UUID_PATTERN } from './ids.ts'

const UUID = UUID_PATTERN.source.slice(1, -1)
const NAME = new RegExp(`^(${UUID})/(?:(board)|tasks/(${UUID})|maps/(${UUID}))$`)

export function boardDocName(orgId: string): string {
  return `${orgId}/board`
}

export function cardDocName(orgId: string, taskId: string): string {
  return `${orgId}/tasks/${taskId}`
}

export function mapDocName(orgId: string, mapId: string): string {
  return `${orgId}/maps/${mapId}`
}

export type DocRef =
  | { kind: 'board'; orgId: string }
  | { kind: 'card'; orgId: string; taskId: string }
  | { kind: 'map'; orgId: string; mapId: string }

/** What a document name names, or undefined for anything outside the three shapes. */
export function parseDocName(name: string): DocRef | undefined {
  const m = NAME.exec(name)
  if (!m) return undefined
  const orgId = m[1] as string
  if (m[2]) return { kind: 'board', orgId }
  if (m[3]) return { kind: 'card', orgId, taskId: m[3] }
  return { kind: 'map', orgId, mapId: m[4] as string }
}

/** The organisation a document name belongs to: every name starts with its id. */
export function orgIdOf(name: string): string {
  return name.slice(0, 36)
}
