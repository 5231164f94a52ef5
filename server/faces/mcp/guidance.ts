import type { ActionName, ActionSpec } from '../../../shared/actions.ts'
import { LIMITS } from '../../../shared/constants.ts'

/**
 * What an agent needs to use the tools well, written once: what applies to every tool in
 * the server's instructions, what a parameter means in its schema's description, and in
 * each tool's description its own row's text plus, from the row's flag, whether the claim
 * lock applies to it.
 */

/** The specification's recommended loop. */
export const RECOMMENDED_LOOP =
  'Recommended loop: get_board (summary:true) → get_task → claim_task → do the work → add_comment → move_task → release_task (also when failing) → get_changes with the returned cursor as since.'

/** The loop of an agent in a fleet: the queue hands out work, so nobody picks the same card. */
export const QUEUE_LOOP =
  'Working a queue with other agents: claim_next (filter by role, columnId, projectId, tag or type) → do the work → heartbeat_task before expiresAt → move_task to the done column → release_task (also when failing) → claim_next again, until it answers task null (nothing free: come back later or follow get_changes). claim_next claims for you: no claim_task needed, and no two agents ever get the same card.'

/** Dependencies between cards, as agents meet them. */
export const BLOCKERS_NOTE =
  'Blockers: set_task_dependencies sets the cards a card waits for (blockedBy). A card is blocked while one of them is open (on the board, not in a done column); claim_next never hands out a blocked card, and get_board filters with blocked. When its last open blocker moves to done or is archived, the card is unblocked: it shows in get_changes (and the card.unblocked webhook). A closed blocker stays in blockedBy.'

/** The identity params' bounds, said once rather than in each write's schema. */
const IDENTITY_NOTE = `Identity (every write takes it; the tools where it counts list it): agents sharing one key are told apart by name. Send agentName (${LIMITS.agentName.min}–${LIMITS.agentName.max} characters; and house, ${LIMITS.house.min}–${LIMITS.house.max}, with generation, ${LIMITS.generation.min}–${LIMITS.generation.max.toLocaleString('en')}, or isSubChild with the PARENT name) on claim_task or claim_next, and the same identity on every later write to that card. add_comment without agentName counts as a person’s comment.`

/** The cheap way to read, taught first: an agent pays for every character it reads. */
export const READING_NOTE =
  'Reading cheaply: start with get_board summary:true (add columnId, tag, priority or projectId to narrow); find a card by its words with search_tasks; read one card with get_task. Every answer fits a budget: a longer one is its first page, with nextCursor (get_board, get_map, search_tasks, the lists) or commentsBefore (get_task) to read on, and a note saying what was left out; get_changes cuts at a moment and returns its cursor.'

/** What an answer always carries: its output schema's required fields. */
const ANSWERS_NOTE =
  'Answers: the fields an output schema requires are always there (null when empty); nextCursor, changesCursor, commentsTruncated, commentsBefore, omitted and note only when a page or budget says so.'

/** The one per-tool note: which tools the claim lock applies to (what a 409 asks is in the instructions). */
const CLAIM_LOCK_NOTE = 'Claim locked (see the instructions).'

const ERRORS_NOTE =
  'Failures are tool errors (isError) with { status, error }: 400 fix the params named in the message; 404 the id is stale, re-read; 403 do not retry; 429 wait retryAfter seconds and slow down; 500 retry once after a short pause.'

/**
 * The MCP tool description of one action: its own text, and for a claim-locked one the
 * note saying so. What applies to every tool (the loop, the claim lock's 409s, identity,
 * positions, errors) is written once, in the server's instructions.
 */
export function toolDescription(spec: ActionSpec): string {
  return spec.claimLocked ? `${spec.description} ${CLAIM_LOCK_NOTE}` : spec.description
}

/** `get_board` → `Get board`: the human-readable title clients show. */
export function toolTitle(name: ActionName): string {
  const words = name.replaceAll('_', ' ')
  return words.charAt(0).toUpperCase() + words.slice(1)
}

/**
 * The server's `instructions` (sent at initialisation): the whole guide in one place.
 * `positionTools` are the tools that take a `position`, read from their schemas.
 */
export function serverInstructions(positionTools: readonly string[]): string {
  return [
    'Corkboard: a shared team board (columns, cards, comments, screenshots) and mind maps, worked on live by people and agents. Every tool is one action of the agent endpoint and writes appear live to people watching the board.',
    READING_NOTE,
    RECOMMENDED_LOOP,
    QUEUE_LOOP,
    BLOCKERS_NOTE,
    'Claiming a card is a real lock (tools marked claim locked). Unknown parameters are refused with a 400 naming them. Claim before changing a card and release it when done, also when the work failed. A 409 with holder: someone else holds the card; work another card and come back after expiresAt. A 409 without holder: you hold no live claim (released, taken back, never claimed or lapsed); claim again before writing. If the message says another agent is working on the card but there is no holder, back off instead of re-claiming. Never retry a 409 in a loop.',
    IDENTITY_NOTE,
    `Positions: leave position out on ${positionTools.join(', ')} to append; that is the advised use.`,
    'Images are sent as plain base64 bytes in imageBase64 (no data: prefix, no whitespace, never a URL); PNG or WebP preferred, at most 3 MB. get_task returns a card’s screenshots as image content.',
    'Follow changes with get_changes: call it without since to start watching, then send back the cursor it returns as since; truncated:true means call again at once.',
    ANSWERS_NOTE,
    ERRORS_NOTE,
  ].join('\n\n')
}
