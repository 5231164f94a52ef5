import { describe, expect, test } from 'vitest'
import { loadConfig } from '../../server/config.ts'

describe('the settings are read from the environment with safe defaults, and nonsense is refused at start', () => {
  test('defaults: sign-in budgets of 30 failures per address in 15 minutes and 10 per account in 5', () => {
    const config = loadConfig({})
    expect(config.loginFailuresPerAddress).toBe(30)
    expect(config.loginAddressWindowSeconds).toBe(900)
    expect(config.loginFailuresPerAccount).toBe(10)
    expect(config.loginAccountWindowSeconds).toBe(300)
    expect(config.publicUrl).toBeUndefined()
  })

  test('each is set by its variable', () => {
    const config = loadConfig({
      LOGIN_FAILURES_PER_ADDRESS: '50',
      LOGIN_ADDRESS_WINDOW_SECONDS: '600',
      LOGIN_FAILURES_PER_ACCOUNT: '5',
      LOGIN_ACCOUNT_WINDOW_SECONDS: '120',
      HTTP_REQUEST_TIMEOUT_MS: '0',
      SYNC_MAX_MESSAGE_BYTES: '1048576',
      PUBLIC_URL: 'https://board.example.com/corkboard/',
    })
    expect(config).toMatchObject({
      loginFailuresPerAddress: 50,
      loginAddressWindowSeconds: 600,
      loginFailuresPerAccount: 5,
      loginAccountWindowSeconds: 120,
      httpRequestTimeoutMs: 0,
      syncMaxMessageBytes: 1_048_576,
      publicUrl: 'https://board.example.com/corkboard/',
    })
  })

  test.each([
    ['MAX_CONNECTIONS_PER_ADDRESS', '-1', /MAX_CONNECTIONS_PER_ADDRESS must be a whole number/],
    ['HTTP_HEADERS_TIMEOUT_MS', '2.5', /HTTP_HEADERS_TIMEOUT_MS must be a whole number/],
    ['SYNC_AUTH_TIMEOUT_MS', 'soon', /SYNC_AUTH_TIMEOUT_MS must be a number/],
    ['SYNC_MAX_MESSAGE_BYTES', '0', /SYNC_MAX_MESSAGE_BYTES must be a whole number of at least 1/],
    ['LOGIN_FAILURES_PER_ACCOUNT', '0', /LOGIN_FAILURES_PER_ACCOUNT .* at least 1/],
    ['LOGIN_ADDRESS_WINDOW_SECONDS', '0', /LOGIN_ADDRESS_WINDOW_SECONDS .* at least 1/],
    [
      'DB_STATEMENT_TIMEOUT_MS',
      '-5',
      /DB_STATEMENT_TIMEOUT_MS must be a whole number of at least 1/,
    ],
    ['DB_LOCK_TIMEOUT_MS', '0', /DB_LOCK_TIMEOUT_MS must be a whole number of at least 1/],
    ['CLAIM_LEASE_SECONDS', '1.5', /CLAIM_LEASE_SECONDS must be a whole number of at least 1/],
    ['RATE_LIMIT_PER_KEY', '-1', /RATE_LIMIT_PER_KEY must be a whole number of at least 1/],
    ['SESSION_TTL_DAYS', '0', /SESSION_TTL_DAYS must be a whole number of at least 1/],
    ['WEBHOOK_CONCURRENCY', '0', /WEBHOOK_CONCURRENCY must be a whole number of at least 1/],
    ['PORT', '70000', /PORT must be a whole number from 0 to 65535/],
    ['SCRYPT_N', '1000', /SCRYPT_N must be a power of two/],
    ['WEBHOOK_ALLOW_PRIVATE', 'yes', /WEBHOOK_ALLOW_PRIVATE must be 1 or 0/],
    ['PUBLIC_URL', 'board.example.com', /PUBLIC_URL must be an absolute http or https URL/],
    ['PUBLIC_URL', 'ftp://board.example.com', /PUBLIC_URL must be an absolute http or https URL/],
  ])('%s=%s is refused at start with a message naming it', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(message)
  })
})
