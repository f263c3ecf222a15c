/**
 * Owns the `sluice` command line: its commands (check-rules, simulate), flags and help.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SluiceError } from '@sluice/core'
import { formatRuleTable, loadRules } from '@sluice/rules'
import { runSimulateCommand } from './index'

/** Where a command writes; tests pass their own. */
export interface CliIo {
  out(text: string): void
  err(text: string): void
}

/**
 * One `sluice <name>` command. To add one, write its module and add an entry to `COMMANDS`:
 * parsing argv beyond the name, and everything else, is the command's own business.
 */
export interface CliCommand {
  readonly name: string
  /** Arguments as shown in usage, e.g. '<file>'. */
  readonly args: string
  /** One line for `sluice help`. */
  readonly summary: string
  /** Runs with the arguments after the name; resolves to the exit code. */
  run(args: readonly string[], io: CliIo): number | Promise<number>
}

const checkRules: CliCommand = {
  name: 'check-rules',
  args: '<file>',
  summary: 'validate a rules file (YAML or JSON) and print the effective rule table',
  run(args, io) {
    if (args[0] === '--help' || args[0] === '-h') {
      io.out('usage: sluice check-rules [--] <file>')
      return 0
    }
    // `--` ends the options, as for any command line tool: `-- -rules.yaml` names that file.
    const files = args[0] === '--' ? args.slice(1) : args
    if (files.length !== 1) {
      io.err('usage: sluice check-rules [--] <file>')
      return 2
    }
    // loadRules throws a RulesError naming the file, the path in it and what is wrong.
    io.out(formatRuleTable(loadRules(files[0])))
    return 0
  },
}

const simulateCommand: CliCommand = {
  name: 'simulate',
  args: '--algorithm <name> --limit <n> --window <duration> [--burst N] [--trace T] [--out F]',
  summary: 'run a traffic trace through a limit and draw it as an SVG',
  run: (args) => runSimulateCommand(args),
}

/** The entry of @sluice/postgres that runs `sluice postgres`; a variable, so it is not bundled. */
const POSTGRES_CLI = '@sluice/postgres/cli'

/** `sluice postgres ...` lives in @sluice/postgres (installed only by its users), loaded on use. */
const postgresCommand: CliCommand = {
  name: 'postgres',
  args: 'migrate --url <url> [--table <name>] [--schema <name>] [--unlogged]',
  summary: "create PostgresStore's table (needs @sluice/postgres)",
  run(args, io) {
    let cli: Pick<CliCommand, 'run'>
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      cli = require(POSTGRES_CLI) as Pick<CliCommand, 'run'>
    } catch {
      io.err('sluice postgres needs @sluice/postgres: npm install @sluice/postgres pg')
      return 1
    }
    return cli.run(args, io)
  },
}

export const COMMANDS: readonly CliCommand[] = [checkRules, simulateCommand, postgresCommand]

function usage(): string {
  return [
    'usage: sluice <command> [arguments]',
    '       sluice --version',
    '',
    'commands:',
    // The arguments are long: each summary goes on a line of its own, indented under its command.
    ...COMMANDS.flatMap((c) => [`  ${c.name} ${c.args}`, `      ${c.summary}`]),
    '',
    "Run 'sluice <command> --help' for a command's options.",
  ].join('\n')
}

/** The installed @sluice/cli version: the CLI runs from its dist/ (or, in tests, src/) folder. */
function version(): string {
  const manifest = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as {
    version: string
  }
  return manifest.version
}

/** Runs one command line (without `node` and the script); resolves to the exit code. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...args] = argv
  if (name === '--version' || name === '-v') {
    io.out(version())
    return 0
  }
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    ;(name === undefined ? io.err : io.out)(usage())
    return name === undefined ? 2 : 0
  }
  const command = COMMANDS.find((c) => c.name === name)
  if (command === undefined) {
    io.err(`sluice: unknown command ${JSON.stringify(name)}\n\n${usage()}`)
    return 2
  }
  try {
    return await command.run(args, io)
  } catch (error) {
    // Sluice's own errors are the user's to fix: their message is the whole story, no stack.
    io.err(error instanceof SluiceError ? error.message : String((error as Error)?.stack ?? error))
    return 1
  }
}

if (require.main === module) {
  void main(process.argv.slice(2), {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
  }).then((code) => {
    process.exitCode = code
  })
}
