// `npm run example`: starts examples/express-basic on a free port (memory store), fires a burst
// of requests at it (sliding-log: an exact count) and prints each status with its rate-limit headers: watch 200s turn into 429s.
const { createApp } = require('./express-basic/app')

const BURST = 8
const SHOWN = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'ratelimit', 'retry-after']

async function main() {
  const server = createApp({ limit: 5, window: '10s', algorithm: 'sliding-log' }).listen(
    0,
    '127.0.0.1',
  )
  await new Promise((resolve) => server.once('listening', resolve))
  const url = `http://127.0.0.1:${server.address().port}/`
  console.log(`express-basic: 5 requests per 10 s per client. Sending ${BURST} to ${url}\n`)
  try {
    for (let i = 1; i <= BURST; i++) {
      const res = await fetch(url)
      const headers = SHOWN.filter((name) => res.headers.has(name))
        .map((name) => `${name}: ${res.headers.get(name)}`)
        .join('  ')
      const body = await res.json()
      const note = res.status === 429 ? `  ${body.message}` : ''
      console.log(`#${i}  ${res.status}  ${headers}${note}`)
    }
  } finally {
    server.close()
  }
  console.log('\nSee docs/configuration.md for every option and docs/headers.md for the headers.')
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
