/**
 * Owns how a loaded script is run: EVAL the first time (which loads it), EVALSHA after, and
 * EVAL again on NOSCRIPT.
 */
import type { ScriptClient } from './client/types'
import type { LoadedScript } from './plan'

/** A reply that says the server does not have the script, in every client library's errors. */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.includes('NOSCRIPT')
}

/**
 * EVALSHA (EVAL the first time, which loads the script), then `answer` on the reply. `command`
 * is EVALSHA's: the SHA, numkeys, keys, args. NOSCRIPT (Redis restarted, SCRIPT FLUSH, another
 * cluster node) means the script did not run, so sending it again with EVAL, once, counts
 * nothing twice.
 */
export function evaluate<T>(
  client: ScriptClient,
  script: LoadedScript,
  command: string[],
  answer: (reply: unknown) => T,
): Promise<T> {
  if (!script.sent) {
    script.sent = true
    return client.eval(script.lua, ...command.slice(1)).then(answer)
  }
  return client.evalsha(...command).then(answer, (error: unknown) => {
    if (!isNoScript(error)) throw error
    return client.eval(script.lua, ...command.slice(1)).then(answer)
  })
}
