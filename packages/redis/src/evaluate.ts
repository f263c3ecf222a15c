/**
 * Owns how a loaded script is run: EVAL the first time (which loads it), EVALSHA after, and
 * EVAL again on NOSCRIPT.
 */
import type { LoadedScript } from './plan'

/**
 * ioredis's EVAL and EVALSHA, which auto-pipeline like any command when the client does, in
 * their Buffer-reply form: a flat script replies with integers only (nested in arrays for a
 * batch), which need no decoding, and the string form would walk every reply element looking
 * for Buffers to turn into strings (a few percent of a decision's CPU in the profile).
 */
export interface Evaluator {
  evalBuffer(...args: string[]): Promise<unknown>
  evalshaBuffer(...args: string[]): Promise<unknown>
}

/**
 * EVALSHA (EVAL the first time, which loads the script), then `answer` on the reply.
 * NOSCRIPT (Redis restarted, SCRIPT FLUSH, another cluster node) means the script did not
 * run, so sending it again with EVAL counts nothing twice.
 */
export function evaluate<T>(
  client: Evaluator,
  script: LoadedScript,
  args: string[],
  answer: (reply: unknown) => T,
): Promise<T> {
  if (!script.sent) {
    script.sent = true
    return client.evalBuffer(script.lua, ...args.slice(1)).then(answer)
  }
  return client.evalshaBuffer(...args).then(answer, (error: unknown) => {
    if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error
    return client.evalBuffer(script.lua, ...args.slice(1)).then(answer)
  })
}
