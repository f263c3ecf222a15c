// Koa app: 5 requests per 10 seconds, keyed by API token when one is sent, else by IP.
// Run: node examples/koa-basic/app.js, then curl -i -H 'x-api-key: demo' http://localhost:3000/
const Koa = require('koa')
const { rateLimit, headerKey } = require('@sluice/koa')

function createApp(options = {}) {
  const app = new Koa()
  // Behind a proxy, trust exactly it (see docs/proxies.md): app.proxy = true; app.maxIpsCount = 1
  app.use(rateLimit({ limit: 5, window: '10s', key: headerKey('x-api-key'), ...options }))
  app.use(async (ctx) => {
    ctx.body = { hello: 'world', remaining: ctx.state.rateLimit.remaining }
  })
  return app
}

module.exports = { createApp }

if (require.main === module) {
  const port = Number(process.env.PORT) || 3000
  createApp().listen(port, () => console.log(`koa-basic on http://localhost:${port}/`))
}
