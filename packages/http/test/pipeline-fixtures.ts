// What the pipeline tests share: a framework's defaults and a response it need not watch.
import type { ResponseLike } from '@sluice/http'

export const DEFAULTS = { framework: 'Test', resetStyle: 'delta' } as const

/** A response the pipeline has no reason to watch (no refunds, queue or slots here). */
export const RES: ResponseLike = {
  writableFinished: false,
  destroyed: false,
  statusCode: 200,
  once: () => undefined,
  off: () => undefined,
}
