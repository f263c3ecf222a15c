// Prometheus metrics for a limiter, on plain node:http: 5 requests per 10 seconds per client IP,
// the decisions counted per policy, and the counts served on /metrics.
// Run: npm run build, then node examples/metrics/server.js;
//      for i in 1 2 3 4 5 6 7; do curl -s -o /dev/null -w '%{http_code}\n' localhost:3000/; done
//      curl -s localhost:3000/metrics | grep sluice_
const http = require('node:http')
const { Registry, collectDefaultMetrics } = require('prom-client')
const { createLimiter, prometheusMetrics } = require('@sluice/core')

function createServer({ registry = new Registry(), shadow = false } = {}) {
  collectDefaultMetrics({ register: registry })
  const limiter = createLimiter({
    limit: 5,
    window: '10s',
    name: 'per-ip',
    shadow,
    onDecision: prometheusMetrics({ registry }),
  })

  return http.createServer(async (req, res) => {
    if (req.url === '/metrics') {
      // Scrapes are not rate limited: a monitoring outage must not hide behind a 429.
      res.setHeader('content-type', registry.contentType)
      res.end(await registry.metrics())
      return
    }
    const decision = await limiter.consume(req.socket.remoteAddress ?? 'unknown')
    if (!decision.allowed) {
      res.statusCode = 429
      res.setHeader('retry-after', Math.ceil(decision.retryAfterMs / 1000))
      res.end('Too Many Requests\n')
      return
    }
    res.end(`hello (${decision.remaining} left)\n`)
  })
}

module.exports = { createServer }

if (require.main === module) {
  const port = Number(process.env.PORT) || 3000
  createServer().listen(port, () => console.log(`metrics example on http://localhost:${port}/`))
}
