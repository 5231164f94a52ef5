import { describe, expect, test } from 'vitest'
import { loadConfig } from '../../server/config.ts'

describe('the security settings are read from the environment with safe defaults', () => {
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
    ['PUBLIC_URL', 'board.example.com', /PUBLIC_URL must be an absolute http or https URL/],
    ['PUBLIC_URL', 'ftp://board.example.com', /PUBLIC_URL must be an absolute http or https URL/],
  ])('%s=%s is refused at start with a message naming it', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(message)
  })
})
