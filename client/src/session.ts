import { useSyncExternalStore } from 'react'
import { appApi, type Me, meSchema, type Organization, type User } from './api/app-api.ts'
import { ApiFailure, setSignedOutHandler } from './api/http.ts'
import { Emitter } from './store.ts'

export type SessionState =
  | { status: 'loading' }
  | { status: 'signed-out' }
  | {
      status: 'signed-in'
      user: User
      organizations: Organization[]
      /** True when the server could not be reached and this is the copy kept on the device. */
      fromCache: boolean
    }

const ME_KEY = 'corkboard.me'
const LAST_ORG_KEY = 'corkboard.lastOrg'

function readCachedMe(): Me | undefined {
  try {
    const raw = localStorage.getItem(ME_KEY)
    if (!raw) return undefined
    const parsed = meSchema.safeParse(JSON.parse(raw))
    if (parsed.success) return parsed.data
  } catch {
    // A corrupt cache is the same as none.
  }
  return undefined
}

/**
 * Who is signed in. The last answer of /me is kept on the device so the app opens without
 * a connection (the documents themselves are in IndexedDB).
 */
class SessionStore {
  state: SessionState = { status: 'loading' }
  private readonly changed = new Emitter()
  private signOutCallbacks = new Set<(userId: string) => Promise<void> | void>()

  subscribe = this.changed.subscribe

  private set(state: SessionState) {
    this.state = state
    this.changed.emit()
  }

  private signedIn(me: Me, fromCache: boolean) {
    if (!fromCache) localStorage.setItem(ME_KEY, JSON.stringify(me))
    this.set({ status: 'signed-in', user: me.user, organizations: me.organizations, fromCache })
  }

  async load(): Promise<void> {
    try {
      this.signedIn(await appApi.me(), false)
    } catch (error) {
      const cached = readCachedMe()
      if (error instanceof ApiFailure && error.offline && cached) this.signedIn(cached, true)
      else this.markSignedOut()
    }
  }

  async refresh(): Promise<void> {
    try {
      this.signedIn(await appApi.me(), false)
    } catch {
      // Offline or signed out: the handler for 401 already acted.
    }
  }

  async login(email: string, password: string): Promise<void> {
    this.signedIn(await appApi.login(email, password), false)
  }

  async signup(input: {
    email: string
    password: string
    name: string
    organizationName: string
  }): Promise<Organization> {
    const { organization } = await appApi.signup(input)
    await this.refresh()
    return organization
  }

  /** Runs before the local copies are forgotten on sign-out (closing live documents). */
  onSignOut(fn: (userId: string) => Promise<void> | void): () => void {
    this.signOutCallbacks.add(fn)
    return () => this.signOutCallbacks.delete(fn)
  }

  async logout(): Promise<void> {
    const userId = this.state.status === 'signed-in' ? this.state.user.id : undefined
    try {
      await appApi.logout()
    } finally {
      if (userId) for (const fn of this.signOutCallbacks) await fn(userId)
      this.markSignedOut()
    }
  }

  markSignedOut() {
    localStorage.removeItem(ME_KEY)
    this.set({ status: 'signed-out' })
  }
}

export const session = new SessionStore()
setSignedOutHandler(() => {
  if (session.state.status === 'signed-in' && !session.state.fromCache) session.markSignedOut()
})

export function useSession(): SessionState {
  return useSyncExternalStore(session.subscribe, () => session.state)
}

export function lastOrgId(): string | null {
  return localStorage.getItem(LAST_ORG_KEY)
}

export function rememberOrg(orgId: string): void {
  localStorage.setItem(LAST_ORG_KEY, orgId)
}
