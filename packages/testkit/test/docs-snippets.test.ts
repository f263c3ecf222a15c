import { spawn } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import ts from 'typescript'
import { startRedis, type RedisServer } from '@sluice/testkit'

// Every js/ts code block in README.md and docs/ is checked, so that no snippet a user copies
// can rot. A block is type-checked as a program of its own against the built packages (as a
// user's code sees them), in one TypeScript program for all blocks. A block that is a fragment
// (it uses an `app`, `req` or `limiter` defined elsewhere on the page) is marked with the line
// `<!-- snippet: fragment -->` above its fence: it is parsed (no syntax errors), not
// type-checked. Every other block is a whole program, and runs too (see the last test).
// Failures name the file and the line of the block.
const root = resolve(__dirname, '../../..')
const scratch = join(root, '.tmp', 'snippets')
const LANGUAGES: Record<string, 'js' | 'ts'> = {
  js: 'js',
  javascript: 'js',
  cjs: 'js',
  mjs: 'js',
  ts: 'ts',
  typescript: 'ts',
}

interface Snippet {
  file: string
  line: number
  language: 'js' | 'ts'
  fragment: boolean
  code: string
}

function markdownFiles(): string[] {
  const docs = join(root, 'docs')
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory()
        ? walk(join(dir, entry.name))
        : entry.name.endsWith('.md')
          ? [join(dir, entry.name)]
          : [],
    )
  return [join(root, 'README.md'), ...walk(docs)]
}

/** The js/ts fenced blocks of one Markdown file, with the line each starts on. */
export function snippetsOf(file: string, text: string): Snippet[] {
  const lines = text.split('\n')
  const found: Snippet[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w+)\s*$/.exec(lines[i])
    if (open === null) continue
    let end = i + 1
    while (end < lines.length && !lines[end].startsWith('```')) end++
    const language = LANGUAGES[open[1]]
    if (language !== undefined) {
      // The marker is the nearest line above the fence that is not blank (Prettier puts a
      // blank line between an HTML comment and a fence).
      let above = i - 1
      while (above > 0 && lines[above].trim() === '') above--
      const fragment = above >= 0 && lines[above].trim() === '<!-- snippet: fragment -->'
      found.push({
        file,
        line: i + 1,
        language,
        fragment,
        code: lines.slice(i + 1, end).join('\n'),
      })
    }
    i = end
  }
  return found
}

function describeDiagnostic(diagnostic: ts.Diagnostic, where: Map<string, Snippet>): string {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')
  const snippet = diagnostic.file && where.get(resolve(diagnostic.file.fileName))
  if (snippet === undefined || diagnostic.file === undefined) return message
  const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0)
  return `${relative(root, snippet.file)}:${snippet.line + 1 + line}: ${message}`
}

const snippets = markdownFiles().flatMap((file) => snippetsOf(file, readFileSync(file, 'utf8')))

beforeAll(() => {
  rmSync(scratch, { recursive: true, force: true })
  mkdirSync(scratch, { recursive: true })
})

test('README.md and docs/ hold code blocks to check', () => {
  expect(snippets.length).toBeGreaterThan(20)
})

test('fragments parse', () => {
  const errors: string[] = []
  for (const snippet of snippets.filter((s) => s.fragment)) {
    const kind = snippet.language === 'ts' ? ts.ScriptKind.TS : ts.ScriptKind.JS
    const source = ts.createSourceFile('fragment', snippet.code, ts.ScriptTarget.ES2022, true, kind)
    const parsed = (source as unknown as { parseDiagnostics: ts.Diagnostic[] }).parseDiagnostics
    for (const d of parsed) {
      const { line } = source.getLineAndCharacterOfPosition(d.start ?? 0)
      errors.push(
        `${relative(root, snippet.file)}:${snippet.line + 1 + line}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
      )
    }
  }
  expect(errors).toEqual([])
})

/**
 * A snippet with import/export, or with a top-level await (shown as a module would run it), is
 * an ES module; else a CommonJS script.
 */
function isModule(snippet: Snippet): boolean {
  return /^\s*(import|export)\s/m.test(snippet.code) || /^(const .*= )?await /m.test(snippet.code)
}

test('every whole snippet type-checks against the built packages', () => {
  const where = new Map<string, Snippet>()
  const files: string[] = []
  snippets
    .filter((s) => !s.fragment)
    .forEach((snippet, i) => {
      const esm = isModule(snippet)
      const extension = snippet.language === 'ts' ? (esm ? 'mts' : 'cts') : esm ? 'mjs' : 'cjs'
      const file = join(scratch, `s${i}.${extension}`)
      writeFileSync(file, snippet.code)
      where.set(resolve(file), snippet)
      files.push(file)
    })
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowJs: true,
    checkJs: true,
    noEmit: true,
    skipLibCheck: true,
    esModuleInterop: true,
    types: ['node'],
    typeRoots: [join(root, 'node_modules/@types')],
  }
  // TypeScript snippets as a strict project checks them; JavaScript ones as an editor does
  // (wrong names, calls and option shapes are errors; missing type annotations are not).
  const typescript = files.filter((f) => /\.[mc]ts$/.test(f))
  const javascript = files.filter((f) => /\.[mc]js$/.test(f))
  const errors = [
    ...ts.getPreEmitDiagnostics(ts.createProgram(typescript, { ...options, strict: true })),
    ...ts.getPreEmitDiagnostics(ts.createProgram(javascript, { ...options, strict: false })),
  ]
    .filter((d) => d.file === undefined || where.has(resolve(d.file.fileName)))
    .map((d) => describeDiagnostic(d, where))
  expect(errors).toEqual([])
})

/** How long a program may run: one still running then (a server) has started without error. */
const RUN_MS = 3000

/** Runs `file` with node; the exit code and stderr, or `running` if it outlived RUN_MS. */
function run(
  file: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; running: boolean; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [file], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    let running = false
    const timer = setTimeout(() => {
      running = true
      child.kill('SIGKILL')
    }, RUN_MS)
    child.on('exit', (code) => {
      clearTimeout(timer)
      done({ code: running ? null : code, running, stderr })
    })
  })
}

describe('whole snippets run', () => {
  let redis: RedisServer

  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })

  test('each exits 0, or is still serving after 3 s, with nothing on stderr', async () => {
    // Run where the docs' rules.yaml (the first YAML block of docs/rules.md) is, and with the
    // test Redis as REDIS_URL, which the Redis snippets connect to.
    const dir = join(scratch, 'run')
    mkdirSync(dir, { recursive: true })
    const rulesDoc = readFileSync(join(root, 'docs', 'rules.md'), 'utf8')
    writeFileSync(join(dir, 'rules.yaml'), /```yaml\n([\s\S]*?)```/.exec(rulesDoc)![1])
    const env = { ...process.env, REDIS_URL: redis.url, NODE_ENV: 'production' }
    const failures: string[] = []
    const whole = snippets.filter((s) => !s.fragment)
    for (const [i, snippet] of whole.entries()) {
      const esm = isModule(snippet)
      const code =
        snippet.language === 'ts'
          ? ts.transpileModule(snippet.code, {
              compilerOptions: {
                module: esm ? ts.ModuleKind.ESNext : ts.ModuleKind.CommonJS,
                target: ts.ScriptTarget.ES2022,
                esModuleInterop: true,
              },
            }).outputText
          : snippet.code
      const file = join(dir, `run${i}.${esm ? 'mjs' : 'cjs'}`)
      writeFileSync(file, code)
      const outcome = await run(file, dir, env)
      const where = `${relative(root, snippet.file)}:${snippet.line}`
      if (!outcome.running && outcome.code !== 0) {
        failures.push(`${where}: exited with code ${outcome.code}: ${outcome.stderr.trim()}`)
      } else if (outcome.stderr !== '') {
        failures.push(`${where}: wrote to stderr: ${outcome.stderr.trim()}`)
      }
    }
    expect(whole.length).toBeGreaterThan(10)
    expect(failures).toEqual([])
  }, 120_000)
})
