/**
 * Owns timing helpers for tests: how late the event loop ran, and latencies of paced calls.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'

/**
 * Watches how late the event loop runs while a timed check is under way: time that a loaded or
 * paused machine (a CI runner's VM losing its CPU) took from the code under test. An upper bound
 * on elapsed time adds what `stop()` returns, so it fails for code that waits too long, not for a
 * machine that stalled.
 */
export function watchStalls(): { stop(): number } {
  const histogram = monitorEventLoopDelay({ resolution: 5 })
  histogram.enable()
  return {
    /** Stops watching; the longest the loop was late, in milliseconds (0 if it never was). */
    stop() {
      histogram.disable()
      return histogram.count === 0 ? 0 : histogram.max / 1e6
    },
  }
}

/**
 * Makes `count` calls, `perBatch` at a time with `gapMs` between batches (all at once by
 * default), and resolves with each one's latency in ms, from its own start to its answer.
 */
export async function latenciesOf(
  count: number,
  call: (index: number) => Promise<unknown>,
  pacing: { perBatch: number; gapMs: number } = { perBatch: count, gapMs: 0 },
): Promise<number[]> {
  const answers: Promise<number>[] = []
  for (let index = 0; index < count; index++) {
    if (index > 0 && index % pacing.perBatch === 0) {
      await new Promise((resolve) => setTimeout(resolve, pacing.gapMs))
    }
    const start = performance.now()
    answers.push(call(index).then(() => performance.now() - start))
  }
  return Promise.all(answers)
}
