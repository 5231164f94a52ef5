import type { Reporter, TestModule } from 'vitest/node'

/** Ends the run with the plain `N passed, N failed` line CI reads, beside Vitest's own summary. */
export default class PlainSummary implements Reporter {
  onTestRunEnd(modules: readonly TestModule[]): void {
    let passed = 0
    let failed = 0
    let skipped = 0
    for (const m of modules) {
      for (const t of m.children.allTests()) {
        const state = t.result().state
        if (state === 'passed') passed++
        else if (state === 'failed') failed++
        else skipped++
      }
      if (m.state() === 'failed' && [...m.children.allTests()].length === 0) failed++
    }
    console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`)
  }
}
