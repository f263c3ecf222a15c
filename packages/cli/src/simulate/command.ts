/**
 * Owns `sluice simulate`: its flags, and printing or drawing a simulation.
 */
import { parseArgs } from 'node:util'
import { parseDuration, SluiceError, type AlgorithmName, type WindowAnchor } from '@sluice/core'
import { resolvePolicies } from '@sluice/core/adapter'
import { simulate, type Trace } from './simulate'
import { renderSvg } from './svg'
import { makeTrace, TRACE_NAMES, type TraceName } from './traces'

/** Where the command writes; tests pass their own. */
export interface CommandIo {
  stdout: (text: string) => void
  stderr: (text: string) => void
}

const USAGE = `Usage: sluice simulate --algorithm <name> --limit <n> --window <duration> [options]

Runs a traffic trace through one limit and draws it as an SVG.

  --algorithm   fixed-window | sliding-window | sliding-log | token-bucket | leaky-bucket | gcra
  --limit       requests per window
  --window      e.g. 1s, 500ms, 1m
  --burst       capacity of token-bucket, leaky-bucket and gcra (default: limit)
  --precision   sub-windows of sliding-window (default: 1)
  --anchor      where fixed-window's windows start: clock | first-request (default: clock)
  --trace       ${TRACE_NAMES.join(' | ')} (default: bursty), or a JSON file of [{ "at": ms, "key"?, "cost"? }]
  --windows     length of a built-in trace in windows (default: 8)
                a trace may have at most 250000 requests (a JSON file at most 16 MiB)
  --seed        seed of a built-in trace (default: 1)
  --out         file to write the SVG to (default: standard output)
  --title       title drawn on the picture
  --width, --height   size in px, at most 10000 (default: 480 x 200)
`

/** Largest JSON trace file read: 16 MiB (250,000 requests take about 10 MB). */
const MAX_TRACE_FILE_BYTES = 16 * 1024 * 1024

const defaultIo: CommandIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
}

/** A number flag, or undefined when absent; text that is no number is an error naming the flag. */
/** A flag's whole number (a seed): `1.5` would pass as a number and mean nothing more. */
function wholeOption(value: string | undefined, flag: string): number | undefined {
  const number = numberOption(value, flag)
  if (number !== undefined && !Number.isSafeInteger(number)) {
    throw new SluiceError(
      'ERR_SLUICE_ARGUMENT',
      `\`--${flag}\` must be a whole number; got ${JSON.stringify(value)}`,
    )
  }
  return number
}

function numberOption(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined
  const number = Number(value)
  if (value.trim() === '' || !Number.isFinite(number)) {
    throw new SluiceError(
      'ERR_SLUICE_ARGUMENT',
      `\`--${flag}\` must be a number; got ${JSON.stringify(value)}`,
    )
  }
  return number
}

async function loadTrace(
  name: string,
  limit: number,
  windowMs: number,
  windows: number | undefined,
  seed: number | undefined,
): Promise<Trace> {
  if ((TRACE_NAMES as readonly string[]).includes(name)) {
    return makeTrace(name as TraceName, { limit, windowMs, windows, seed })
  }
  // Loaded here, as node:fs is: the simulator itself runs where there is no file system.
  const { readBoundedText, UnreadableFile } = await import('@sluice/rules')
  let parsed: unknown
  try {
    // A byte-order mark (some editors write one) is not part of the JSON.
    parsed = JSON.parse(readBoundedText(name, MAX_TRACE_FILE_BYTES).replace(/^\uFEFF/, ''))
  } catch (error) {
    // Only the reason: a file that is no trace is not copied into the message.
    const reason =
      error instanceof UnreadableFile
        ? `cannot be read (${error.reason})`
        : error instanceof SyntaxError
          ? 'is not JSON'
          : String(error)
    throw new SluiceError(
      'ERR_SLUICE_ARGUMENT',
      `\`--trace\` must be one of ${TRACE_NAMES.join(', ')} or a JSON file of requests; ${name} ${reason}`,
      { cause: error },
    )
  }
  if (!Array.isArray(parsed)) {
    throw new SluiceError(
      'ERR_SLUICE_ARGUMENT',
      `\`--trace\` file ${name} must hold an array of { "at": ms, "key"?, "cost"? }`,
    )
  }
  return parsed as Trace
}

/**
 * `sluice simulate`: runs a trace through one limit and writes the SVG. Resolves to the exit
 * code: 0 when drawn, 2 for a usage or configuration error (reported on stderr with the usage,
 * never thrown, so the CLI table can return it as is); 1 when the file cannot be written.
 */
export async function runSimulateCommand(
  argv: readonly string[],
  io: CommandIo = defaultIo,
): Promise<number> {
  let values: Record<string, string | boolean | undefined>
  try {
    values = parseArgs({
      args: [...argv],
      options: {
        algorithm: { type: 'string' },
        limit: { type: 'string' },
        window: { type: 'string' },
        burst: { type: 'string' },
        precision: { type: 'string' },
        anchor: { type: 'string' },
        trace: { type: 'string', default: 'bursty' },
        windows: { type: 'string' },
        seed: { type: 'string' },
        out: { type: 'string' },
        title: { type: 'string' },
        width: { type: 'string' },
        height: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values
  } catch (error) {
    io.stderr(`${(error as Error).message}\n\n${USAGE}`)
    return 2
  }
  if (values.help === true) {
    io.stdout(USAGE)
    return 0
  }
  const text = (name: string): string | undefined => values[name] as string | undefined
  try {
    const limit = numberOption(text('limit'), 'limit')
    const windowMs = parseDuration(text('window'), 'window')
    const options = {
      algorithm: text('algorithm') as AlgorithmName | undefined,
      limit: limit as number,
      window: windowMs,
      ...(text('burst') === undefined ? {} : { burst: numberOption(text('burst'), 'burst') }),
      ...(text('precision') === undefined
        ? {}
        : { precision: numberOption(text('precision'), 'precision') }),
      ...(text('anchor') === undefined ? {} : { anchor: text('anchor') as WindowAnchor }),
    }
    // The limit's options first, so a bad one is named as given (`window`), not as the
    // trace's option it also feeds (`windowMs`).
    resolvePolicies(options)
    const trace = await loadTrace(
      text('trace') ?? 'bursty',
      limit as number,
      windowMs,
      numberOption(text('windows'), 'windows'),
      wholeOption(text('seed'), 'seed'),
    )
    const result = simulate(trace, options)
    const svg = renderSvg(result, {
      title: text('title'),
      width: numberOption(text('width'), 'width'),
      height: numberOption(text('height'), 'height'),
    })
    const out = text('out')
    const summary = `${result.admitted} of ${result.requests.length} requests admitted`
    if (out === undefined) {
      io.stdout(svg)
      io.stderr(`${summary}\n`)
    } else {
      const { writeFile } = await import('node:fs/promises')
      try {
        await writeFile(out, svg)
      } catch (error) {
        io.stderr(`cannot write ${out}: ${(error as Error).message}\n`)
        return 1
      }
      io.stderr(`${summary}; wrote ${out}\n`)
    }
    return 0
  } catch (error) {
    if (!(error instanceof SluiceError)) throw error
    io.stderr(`${error.message}\n\n${USAGE}`)
    return 2
  }
}
