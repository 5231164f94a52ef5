import type { Router } from '../../http/router.ts'
import { apiKeyRoutes } from './api-keys.ts'
import { archivedCardRoutes } from './archived-cards.ts'
import { cardHistoryRoutes } from './card-history.ts'
import { cardRoutes } from './cards.ts'
import { columnRoutes } from './columns.ts'
import { commentRoutes } from './comments.ts'
import { connectedAppRoutes } from './connected-apps.ts'
import { dataRoutes } from './data.ts'
import { fileRoutes } from './files.ts'
import { generationRoutes } from './generations.ts'
import { inviteRoutes } from './invites.ts'
import { mapRoutes } from './maps.ts'
import { memberRoutes } from './members.ts'
import { projectRoutes } from './projects.ts'
import { type AppDeps, AppRouter } from './route.ts'
import { searchRoutes } from './search.ts'
import { sessionRoutes } from './session.ts'
import { syncTokenRoutes } from './sync-token.ts'
import { webhookRoutes } from './webhooks.ts'

/**
 * The app API (`/api/app/*`, docs/design.md Contract 2 and docs/app-api.md) and the file
 * routes: what the web app and scripts use as a person, one file per resource.
 */
export function appApi(router: Router, deps: AppDeps): void {
  const app = new AppRouter(router, deps)
  sessionRoutes(app)
  memberRoutes(app)
  inviteRoutes(app)
  apiKeyRoutes(app)
  connectedAppRoutes(app)
  projectRoutes(app)
  syncTokenRoutes(app)
  generationRoutes(app)
  cardRoutes(app)
  archivedCardRoutes(app)
  cardHistoryRoutes(app)
  searchRoutes(app)
  columnRoutes(app)
  commentRoutes(app)
  mapRoutes(app)
  fileRoutes(app)
  webhookRoutes(app)
  dataRoutes(app)
}
