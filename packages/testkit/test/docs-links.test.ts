import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

// Every relative link and image in README.md and docs/*.md must point at a file or directory of
// the repository, and a `#fragment` at a heading (or `<a id>`) of the target Markdown file, as
// GitHub renders it. Links to the web are not fetched.

const ROOT = resolve(__dirname, '../../..')
/** Markdown with fenced code blocks and inline code spans blanked (line numbers kept). */
function prose(markdown: string): string {
  let fence: string | undefined
  return markdown
    .split('\n')
    .map((line) => {
      const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1]
      if (fence === undefined && marker) {
        fence = marker[0]
        return ''
      }
      if (fence !== undefined) {
        if (marker?.[0] === fence) fence = undefined
        return ''
      }
      return line.replace(/`[^`]*`/g, (code) => ' '.repeat(code.length))
    })
    .join('\n')
}

interface Link {
  target: string
  line: number
}

/** Inline links and images `[text](target "title")` and reference definitions `[x]: target`. */
function links(markdown: string): Link[] {
  const text = prose(markdown)
  const lineOf = (index: number): number => text.slice(0, index).split('\n').length
  const found: Link[] = []
  const inline = /!?\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g
  for (const m of text.matchAll(inline)) found.push({ target: m[1], line: lineOf(m.index) })
  const reference = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm
  for (const m of text.matchAll(reference)) found.push({ target: m[1], line: lineOf(m.index) })
  return found
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-')
}

/** The anchors of a Markdown file: its headings (repeats numbered -1, -2) and `<a id|name>`. */
function anchors(markdown: string): Set<string> {
  const result = new Set<string>()
  const seen = new Map<string, number>()
  let fence: string | undefined
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1]
    if (marker && (fence === undefined || marker[0] === fence)) {
      fence = fence === undefined ? marker[0] : undefined
      continue
    }
    if (fence !== undefined) continue
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (heading) {
      const base = slug(heading[1])
      const n = seen.get(base) ?? 0
      seen.set(base, n + 1)
      result.add(n === 0 ? base : `${base}-${n}`)
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) result.add(m[1])
  }
  return result
}

function pages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`)
  return ['README.md', ...docs]
}

/** The broken links of one page, as "page:line target: why". */
function brokenLinks(page: string): string[] {
  const broken: string[] = []
  const file = join(ROOT, page)
  const markdown = readFileSync(file, 'utf8')
  for (const { target, line } of links(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue // web, mailto
    const where = `${page}:${line} ${target}`
    const [pathPart, fragment] = target.split('#', 2)
    let decoded: string
    try {
      decoded = decodeURIComponent(pathPart.split('?')[0])
    } catch {
      broken.push(`${where}: not a valid URL path`)
      continue
    }
    const resolved = decoded === '' ? file : resolve(dirname(file), decoded)
    const inRepo = relative(ROOT, resolved)
    if (inRepo.startsWith('..')) {
      broken.push(`${where}: leaves the repository`)
      continue
    }
    if (!existsSync(resolved)) {
      broken.push(`${where}: no such file`)
      continue
    }
    if (fragment === undefined || fragment === '') continue
    if (statSync(resolved).isDirectory() || !resolved.endsWith('.md')) {
      broken.push(`${where}: a fragment on a file that is not Markdown`)
      continue
    }
    if (!anchors(readFileSync(resolved, 'utf8')).has(decodeURIComponent(fragment))) {
      broken.push(`${where}: no heading #${fragment} in ${inRepo}`)
    }
  }
  return broken
}

describe('documentation links', () => {
  it('finds links, images and reference definitions outside code', () => {
    const md = [
      'See [a](a.md) and ![pic](img/x.svg "title"), [`code`](b.md#part).',
      '`[not](a-link.md)`',
      '```',
      '[not](in-a-fence.md)',
      '```',
      '[ref]: c.md',
      'A [link that',
      'wraps](d.md).',
    ].join('\n')
    expect(links(md)).toEqual([
      { target: 'a.md', line: 1 },
      { target: 'img/x.svg', line: 1 },
      { target: 'b.md#part', line: 1 },
      { target: 'd.md', line: 7 },
      { target: 'c.md', line: 6 },
    ])
  })

  it('computes the anchors GitHub gives headings', () => {
    expect(slug('Redis store (`@sluice/redis`)')).toBe('redis-store-sluiceredis')
    expect(slug('Failure modes, and which to choose')).toBe('failure-modes-and-which-to-choose')
    expect(slug('sliding-window (default)')).toBe('sliding-window-default')
    expect(slug('Is `X-Forwarded-For` trusted?')).toBe('is-x-forwarded-for-trusted')
    expect([...anchors('# A\n## A\n```\n# not\n```\n<a id="here"></a>')]).toEqual([
      'a',
      'a-1',
      'here',
    ])
  })

  it.each(pages())('every relative link in %s resolves', (page) => {
    expect(brokenLinks(page)).toEqual([])
  })
})
