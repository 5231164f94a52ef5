/** What the page's first script (boot.ts) leaves for the app on `window.corkboardBoot`. */
export interface BootRequests {
  /** `${method} ${path}` (path under /api/app) → the response on its way. */
  started: Map<string, Promise<Response>>
  /** The organisation the page was opened on (`/o/<orgId>/...`), if any. */
  orgId: string | undefined
}

declare global {
  interface Window {
    corkboardBoot?: BootRequests
  }
}
