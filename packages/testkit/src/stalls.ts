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
