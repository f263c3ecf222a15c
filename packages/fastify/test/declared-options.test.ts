// The plugin's own options are declared once: names, JSDoc and docs/ agree (testkit); the rest
// are the adapters' (core's HTTP_OPTIONS).
import { join } from 'node:path'
import { testDeclaredOptions } from '@sluice/testkit'
import { ADAPTER_OPTIONS, FASTIFY_OPTIONS } from '../src/options'

const OPTIONS = join(__dirname, '..', 'src', 'options.ts')

testDeclaredOptions(FASTIFY_OPTIONS, [
  [OPTIONS, 'FastifyRouteOwnOptions'],
  [OPTIONS, 'FastifyOwnOptions'],
])

test('the options the plugin keeps from the pipeline are the declared ones', () => {
  expect(ADAPTER_OPTIONS).toEqual(Object.keys(FASTIFY_OPTIONS.table))
  expect(FASTIFY_OPTIONS.resolve({})).toMatchObject({ hook: 'onRequest', global: true })
})
