// Express app whose limits live in Postgres, so every instance behind the load balancer shares
// them: 5 requests per 10 seconds and 20 a minute per client, both all-or-nothing, decided on the
// database's clock. The table is created once at start-up (store.migrate(); in production run
// `npx sluice postgres migrate --url ...` in your deploy step instead).
// Run: DATABASE_URL=postgres://user@127.0.0.1:5432/db node examples/postgres/app.js, then
//      curl -i http://localhost:3000/
const express = require('express')
const { Pool } = require('pg')
const { PostgresStore } = require('@sluice/postgres')
const { rateLimit } = require('@sluice/express')

/** Builds the app on a pool of its own; `close()` ends the pool. */
async function createApp(options = {}) {
  const pool = new Pool({ connectionString: options.databaseUrl ?? process.env.DATABASE_URL })
  const store = new PostgresStore({ client: pool })
  await store.migrate()
  const app = express()
  app.use(
    rateLimit({
      store,
      limits: [
        { limit: 5, window: '10s' },
        { limit: 20, window: '1m' },
      ],
      standardHeaders: 'draft-8',
      timeoutMs: 500,
      // Postgres down: let requests through (and log once), rather than fail the app.
      onStoreError: 'allow',
    }),
  )
  app.get('/', (req, res) => {
    res.json({ hello: 'world', remaining: req.rateLimit.remaining })
  })
  const close = async () => {
    await store.close()
    await pool.end()
  }
  return { app, close }
}

module.exports = { createApp }

if (require.main === module) {
  const port = Number(process.env.PORT) || 3000
  createApp().then(({ app }) =>
    app.listen(port, () => console.log(`postgres example on http://localhost:${port}/`)),
  )
}
