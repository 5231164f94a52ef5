/**
 * The rate budgets of the specification's Limits section. Each is counted over an exact
 * sliding 60-second window in its own counter: every request of a key counts once against
 * the key's budget (a bulk call is one request), and the image actions also count against
 * their organisation's budget for that action, which all of its keys share.
 */

export const RATE_WINDOW_MS = 60_000

export interface Budget {
  /** The policy name in the RateLimit headers. */
  name: string
  scope: 'key' | 'organisation'
  /** Requests allowed in any window of RATE_WINDOW_MS. */
  quota: number
  /** How a 429 names the budget. */
  describe: string
}

export interface RateBudgets {
  perKey: Budget
  /** Extra budgets by action name, counted per organisation. */
  perAction: Readonly<Record<string, Budget>>
}

/**
 * Actions with an organisation-wide budget of their own. Keyed by name rather than by the
 * action table's type, so an action is covered from the moment it exists.
 */
export const ORG_BUDGET_ACTIONS = ['set_node_image', 'attach_screenshot'] as const

export function rateBudgets(limits: { perKey: number; imagesPerOrg: number }): RateBudgets {
  for (const [name, quota] of Object.entries(limits)) {
    if (!Number.isInteger(quota) || quota < 1) {
      throw new Error(`rate budget ${name} must be a whole number of at least 1, got ${quota}`)
    }
  }
  const perAction: Record<string, Budget> = {}
  for (const action of ORG_BUDGET_ACTIONS) {
    perAction[action] = {
      name: `${action}-per-org`,
      scope: 'organisation',
      quota: limits.imagesPerOrg,
      describe: `the ${action} budget of ${limits.imagesPerOrg} calls per minute per organisation (shared by all of its keys)`,
    }
  }
  return {
    perKey: {
      name: 'per-key',
      scope: 'key',
      quota: limits.perKey,
      describe: `the budget of ${limits.perKey} requests per minute per API key`,
    },
    perAction,
  }
}

/** The budgets a request for `action` counts against, the key's first. */
export function budgetsOf(budgets: RateBudgets, action: string | undefined): Budget[] {
  const extra =
    action !== undefined && Object.hasOwn(budgets.perAction, action)
      ? budgets.perAction[action]
      : undefined
  return extra ? [budgets.perKey, extra] : [budgets.perKey]
}
