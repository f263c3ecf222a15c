// Express app limited to 5 requests per 10 seconds per client IP (memory store).
// Run: node examples/express-basic/app.js, then curl -i http://localhost:3000/
const express = require('express')
const { rateLimit } = require('@sluice/express')

/** Builds the app; `options` override the limiter's (the demo passes its own). */
function createApp(options = {}) {
  const app = express()
  // Behind a proxy, trust exactly it (see docs/proxies.md): app.set('trust proxy', 1)
  app.use(rateLimit({ limit: 5, window: '10s', standardHeaders: 'draft-8', ...options }))
  app.get('/', (req, res) => {
    res.json({ hello: 'world', remaining: req.rateLimit.remaining })
  })
  return app
}

module.exports = { createApp }

if (require.main === module) {
  const port = Number(process.env.PORT) || 3000
  createApp().listen(port, () => console.log(`express-basic on http://localhost:${port}/`))
}
