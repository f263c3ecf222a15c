// Test helpers shared by the Sluice packages. More modules (store conformance suite, HTTP
// adapter scenarios) are exported from here as they land.
export * from './servers'
export * from './conformance'
export * from './http-scenarios'
export * from './stalls'
export * from './settled'
export * from './chromium'
export * from './hung-load'
export * from './redis-clients'
export * from './upstash-gateway'
export * from './workerd'
export * from './edge-bundle'
export * from './declared-options'
