/**
 * Owns letting a timer not keep the process alive: Node's timers have `unref`; web runtimes'
 * timers are numbers and keep nothing alive.
 */
export function unrefTimer(timer: unknown): void {
  ;(timer as { unref?: () => void } | undefined)?.unref?.()
}
