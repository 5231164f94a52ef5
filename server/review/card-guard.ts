import type * as Y from 'yjs'
import { cardMaps, commentOrder, readComment } from '../../shared/card-doc.ts'
import { LIMITS } from '../../shared/constants.ts'
import { isUuid } from '../../shared/ids.ts'
import type { Revert } from '../../shared/live-protocol.ts'
import { replaceText } from '../../shared/ytext.ts'
import { stampAfter } from '../board/stamps.ts'
import type { ChangeKind, DomainEvent } from '../live/events.ts'
import { GUARD_ORIGIN } from '../live/origins.ts'
import type { RowOp } from '../live/write-record.ts'
import { type Editor, GENERATION_IS_THE_SERVERS, LastValid, same, snapshot } from './guard-kit.ts'

/**
 * Holds people's live edits of a card document (its description, comments and
 * screenshots) to the rules agents obey, as BoardGuard does for the board: the description
 * is at most 20,000 characters and locked while someone else holds the card's claim; a
 * person may add a comment and edit their own; a comment's body is 1–10,000 characters;
 * authorship and timestamps are the server's; nobody removes a comment or touches a
 * screenshot by editing the document (the app API does that). A comment written offline on
 * a card archived meanwhile is kept: the card document outlives the card's place on the board.
 */

export interface CardReport {
  changes: { kind: ChangeKind; entityId: string }[]
  events: DomainEvent[]
  ops: RowOp[]
  reverts: Revert[]
  /** A comment was added: the card's `stats` follow its document. */
  statsChanged: boolean
  /** The description was changed (and kept): its new text. */
  description: string | undefined
}

/** Who holds a card's live claim, if not this editor (from the board document's claims). */
export type ClaimHolder = (taskId: string, editor: Editor) => string | undefined

/** The transaction changed this type (a Y.Text, which Yjs's typings keep apart from the map). */
const changedIn = (tr: Y.Transaction, type: object) =>
  (tr.changed as Map<object, unknown>).has(type)

const COMMENT_FIELDS = ['taskId', 'body', 'authorEmail', 'agentName', 'createdAt', 'editedAt']
const COMMENT_OWNED = ['taskId', 'authorEmail', 'agentName', 'createdAt', 'editedAt'] as const

export class CardGuard {
  private readonly doc: Y.Doc
  private readonly taskId: string
  private readonly maps: ReturnType<typeof cardMaps>
  private readonly last: LastValid
  private readonly now: () => Date
  private readonly holder: ClaimHolder
  /** The description as it last stood valid. */
  private lastDescription: string

  constructor(doc: Y.Doc, taskId: string, holder: ClaimHolder, now: () => Date = () => new Date()) {
    this.doc = doc
    this.taskId = taskId
    this.holder = holder
    this.now = now
    this.maps = cardMaps(doc)
    this.last = new LastValid(
      {
        comments: this.maps.comments,
        attachments: this.maps.attachments,
        meta: doc.getMap('meta'),
      },
      [this.maps.description],
    )
    this.lastDescription = this.maps.description.toString()
  }

  remember(tr: Y.Transaction): void {
    this.last.rememberAll(tr)
    if (changedIn(tr, this.maps.description))
      this.lastDescription = this.maps.description.toString()
  }

  review(tr: Y.Transaction, editor: Editor): CardReport {
    const report: CardReport = {
      changes: [],
      events: [],
      ops: [],
      reverts: [],
      statsChanged: false,
      description: undefined,
    }
    const touched = this.last.touched(tr)
    this.doc.transact(() => {
      if (this.last.clearStray(this.doc, tr) > 0) {
        report.reverts.push({
          reason: 'a card holds only its description, comments and screenshots',
          taskId: this.taskId,
        })
      }
      if (changedIn(tr, this.maps.description)) this.reviewDescription(editor, report)
      for (const [root, key] of touched) {
        if (root === 'comments') this.reviewComment(key, editor, report)
        else if (root === 'meta') {
          this.last.restore(root, key)
          report.reverts.push({ reason: GENERATION_IS_THE_SERVERS, taskId: this.taskId })
        } else {
          this.last.restore(root, key)
          report.reverts.push({
            reason: 'screenshots are added by agents and deleted in the app, not edited here',
            taskId: this.taskId,
          })
        }
      }
    }, GUARD_ORIGIN)
    for (const [root, key] of touched) this.last.remember(root, key)
    return report
  }

  /** The description: locked under someone else's claim, at most 20,000 characters. */
  private reviewDescription(editor: Editor, report: CardReport): void {
    const text = this.maps.description
    const holder = this.holder(this.taskId, editor)
    const value = text.toString()
    const reason = holder
      ? `this card is claimed by ${holder}; your change was undone`
      : value.length > LIMITS.taskDescription.max
        ? `description must be at most ${LIMITS.taskDescription.max} characters`
        : undefined
    if (reason) {
      replaceText(text, this.lastDescription)
      report.reverts.push({ reason, taskId: this.taskId })
      return
    }
    this.lastDescription = value
    report.description = value
    report.changes.push({ kind: 'task', entityId: this.taskId })
  }

  /** The newest comment's createdAt, from the last valid state. */
  private newest(): string | null {
    let newest: { createdAt: string; id: string } | undefined
    for (const id of this.last.keys('comments')) {
      const c = this.last.get('comments', id)
      const entry = { createdAt: String(c?.createdAt ?? ''), id }
      if (!newest || commentOrder(entry, newest) > 0) newest = entry
    }
    return newest?.createdAt ?? null
  }

  private reviewComment(commentId: string, editor: Editor, report: CardReport): void {
    const m = this.maps.comments.get(commentId)
    const saved = this.last.get('comments', commentId)
    const taskId = this.taskId
    if (!m) {
      if (saved) {
        this.last.restore('comments', commentId)
        report.reverts.push({
          reason: 'comments are deleted through the app, not by editing the card',
          taskId,
        })
      }
      return
    }
    const body = m.get('body')
    const bodyOk =
      typeof body === 'string' &&
      body.length >= LIMITS.commentBody.min &&
      body.length <= LIMITS.commentBody.max
    const now = this.now().toISOString()
    if (!saved) {
      const claimedTask = m.get('taskId')
      if (!isUuid(commentId) || !bodyOk || (claimedTask !== undefined && claimedTask !== taskId)) {
        this.maps.comments.delete(commentId)
        report.reverts.push({
          reason: `comment not added: the body must be 1–${LIMITS.commentBody.max} characters`,
          taskId,
        })
        return
      }
      // Authorship comes from the session, never from the client.
      for (const k of [...m.keys()]) if (!COMMENT_FIELDS.includes(k)) m.delete(k)
      m.set('taskId', taskId)
      m.set('authorEmail', editor.email)
      m.set('agentName', null)
      m.set('createdAt', stampAfter(now, this.newest()))
      m.set('editedAt', null)
      const comment = readComment(commentId, m)
      report.ops.push({ t: 'comment', id: commentId, rec: comment })
      report.changes.push({ kind: 'comment', entityId: commentId })
      report.events.push({
        type: 'comment.added',
        data: { comment, taskId, authorIsHuman: true },
      })
      report.statsChanged = true
      return
    }
    const current = snapshot(m)
    const ownedChanged = COMMENT_OWNED.some((k) => !same(saved[k], current[k]))
    if (
      saved.authorEmail !== editor.email ||
      saved.agentName != null ||
      ownedChanged ||
      !bodyOk ||
      Object.keys(current).some((k) => !(k in saved))
    ) {
      this.last.restore('comments', commentId)
      report.reverts.push({
        reason:
          saved.authorEmail !== editor.email || saved.agentName != null
            ? 'only the author can edit a comment'
            : `a comment body is 1–${LIMITS.commentBody.max} characters`,
        taskId,
      })
      return
    }
    if (saved.body !== body) {
      m.set('editedAt', now)
      report.ops.push({ t: 'comment', id: commentId, rec: readComment(commentId, m) })
      report.changes.push({ kind: 'comment', entityId: commentId })
    }
  }
}
