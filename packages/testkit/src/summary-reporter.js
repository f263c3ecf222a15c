'use strict'
// Closes a jest run with one plain line, "N passed, N failed, N skipped", that any CI reads.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests
    process.stdout.write(
      `\n${results.numPassedTests} passed, ${results.numFailedTests} failed, ${skipped} skipped\n`,
    )
  }
}

module.exports = SummaryReporter
