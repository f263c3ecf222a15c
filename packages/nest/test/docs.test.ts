/**
 * The GraphQL and WebSocket recipes of docs/nest.md are the code the tests run: each file under
 * recipes/ is one code block of the page, unchanged (graphql.test.ts and websockets.test.ts run
 * them in real servers).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

const page = readFileSync(join(__dirname, '../../../docs/nest.md'), 'utf8')
const blocks = [...page.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1])

test.each(['graphql.ts', 'websockets.ts'])(
  'docs/nest.md shows recipes/%s as the tests run it',
  (file) => {
    const code = readFileSync(join(__dirname, 'recipes', file), 'utf8')
    expect(blocks).toContain(code)
  },
)
