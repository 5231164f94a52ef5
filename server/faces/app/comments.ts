import { run } from '../../actions/perform.ts'
import { ApiError } from '../../errors.ts'
import { answer } from '../../http/route-docs.ts'
import { type AppRouter, pathId } from './route.ts'

/** Deleting one's own comment (people add and edit comments in the card's live document). */
export function commentRoutes(app: AppRouter): void {
  const { live } = app.deps

  /**
   * Deletes one's own comment, permanently. People write comments as Yjs edits but never
   * remove anything from the document themselves (docs/design.md), so removal comes here. A
   * comment by someone else (an agent, another person) is 403.
   */
  app.org(
    'DELETE',
    '/comments/:commentId',
    {
      summary: 'Delete your own comment, permanently',
      access: 'member',
      answers: [answer.noContent('The comment is gone.')],
      errors: {
        400: 'commentId is not a UUID.',
        403: "The comment is someone else's.",
        404: 'No such comment.',
      },
    },
    async (_req, { user, org, params }) => {
      const commentId = pathId(params, 'commentId')
      const remove = () =>
        run(app.deps, {
          action: 'delete_comment',
          input: { commentId },
          caller: app.caller({ user, org }),
        })
      try {
        await remove()
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 404) throw error
        // A comment written a moment ago may not be indexed yet: store people's edits, look again.
        await live.flushPeople(org.id)
        await remove()
      }
      return { status: 204 }
    },
  )
}
