'use strict'
// Reads and checks a result file (docs/bench/<part>.json, written by lib.js writeResult): a
// missing or malformed one is an InputError naming the path of the bad field.
const fs = require('node:fs')
const path = require('node:path')

class InputError extends Error {}

function check(condition, where, what) {
  if (!condition) throw new InputError(`${where} ${what}`)
}
const isNumber = (v) => typeof v === 'number' && Number.isFinite(v) && v >= 0
function numberAt(obj, key, where) {
  check(isNumber(obj?.[key]), `${where}.${key}`, 'must be a finite number >= 0')
  return obj[key]
}
function stringAt(obj, key, where) {
  check(typeof obj?.[key] === 'string' && obj[key] !== '', `${where}.${key}`, 'must be a string')
  return obj[key]
}
function arrayAt(obj, key, where) {
  check(Array.isArray(obj?.[key]) && obj[key].length > 0, `${where}.${key}`, 'must be a list')
  return obj[key]
}
function objectAt(obj, key, where) {
  const v = obj?.[key]
  check(typeof v === 'object' && v !== null && !Array.isArray(v), `${where}.${key}`, 'missing')
  return v
}

/** The common envelope of every result file: name, title, machine, packages, data. */
function envelope(record, name) {
  check(typeof record === 'object' && record !== null, name, 'must be an object')
  check(record.name === name, `${name}.name`, `must be "${name}"`)
  stringAt(record, 'title', name)
  const machine = objectAt(record, 'machine', name)
  for (const key of ['date', 'node', 'cpus', 'memory']) stringAt(machine, key, `${name}.machine`)
  objectAt(record, 'packages', name)
  return objectAt(record, 'data', name)
}

const checks = {
  http(data) {
    const frameworks = objectAt(data, 'frameworks', 'data')
    check(Object.keys(frameworks).length > 0, 'data.frameworks', 'must not be empty')
    for (const [name, f] of Object.entries(frameworks)) {
      const where = `data.frameworks.${name}`
      const peer = objectAt(f, 'peer', where)
      stringAt(peer, 'memory', `${where}.peer`)
      stringAt(peer, 'redis', `${where}.peer`)
      const rows = arrayAt(f, 'rows', where)
      rows.forEach((r, i) => {
        stringAt(r, 'variant', `${where}.rows[${i}]`)
        stringAt(r, 'label', `${where}.rows[${i}]`)
        for (const k of ['rps', 'ratio', 'p99', 'rejected']) numberAt(r, k, `${where}.rows[${i}]`)
      })
      // Written by runs of every variant since the results section quotes it; older files lack it.
      if (f.versusPeer !== undefined) {
        const versus = objectAt(f, 'versusPeer', where)
        numberAt(versus, 'redis', `${where}.versusPeer`)
        numberAt(versus, 'redisReject', `${where}.versusPeer`)
      }
      for (const v of ['none', 'sluice-memory', 'peer-memory']) {
        check(
          rows.some((r) => r.variant === v),
          `${where}.rows`,
          `has no "${v}" row`,
        )
      }
    }
  },
  instructions(data) {
    objectAt(data, 'requests', 'data')
    const frameworks = objectAt(data, 'frameworks', 'data')
    check(Object.keys(frameworks).length > 0, 'data.frameworks', 'must not be empty')
    for (const [name, f] of Object.entries(frameworks)) {
      const where = `data.frameworks.${name}`
      stringAt(f, 'peer', where)
      const rows = arrayAt(f, 'rows', where)
      rows.forEach((r, i) => {
        stringAt(r, 'variant', `${where}.rows[${i}]`)
        for (const k of ['instructions', 'ratio', 'total', 'compiler', 'gc'])
          numberAt(r, k, `${where}.rows[${i}]`)
      })
      for (const v of ['none', 'floor', 'sluice-memory', 'peer-memory']) {
        check(
          rows.some((r) => r.variant === v),
          `${where}.rows`,
          `has no "${v}" row`,
        )
      }
    }
  },
  core(data) {
    numberAt(data, 'keys', 'data')
    const rows = arrayAt(data, 'rows', 'data')
    rows.forEach((r, i) => {
      stringAt(r, 'name', `data.rows[${i}]`)
      check(typeof r.peer === 'boolean', `data.rows[${i}].peer`, 'must be true or false')
      for (const k of ['hot', 'insert', 'update', 'bytesPerKey']) numberAt(r, k, `data.rows[${i}]`)
    })
    check(rows.filter((r) => r.peer).length === 1, 'data.rows', 'must have exactly one peer row')
  },
  redis(data) {
    numberAt(data, 'inFlight', 'data')
    const rows = arrayAt(data, 'rows', 'data')
    rows.forEach((r, i) => {
      stringAt(r, 'name', `data.rows[${i}]`)
      check(typeof r.peer === 'boolean', `data.rows[${i}].peer`, 'must be true or false')
      numberAt(r, 'sequential', `data.rows[${i}]`)
      numberAt(r, 'inFlight', `data.rows[${i}]`)
      if (r.stateCeiling !== undefined) numberAt(r, 'stateCeiling', `data.rows[${i}]`)
    })
    check(rows.filter((r) => r.peer).length === 1, 'data.rows', 'must have exactly one peer row')
    const ceiling = objectAt(data, 'ceiling', 'data')
    numberAt(ceiling, 'clients50', 'data.ceiling')
    numberAt(ceiling, 'pipelined', 'data.ceiling')
    arrayAt(data, 'bytesPerKey', 'data').forEach((r, i) => {
      stringAt(r, 'name', `data.bytesPerKey[${i}]`)
      numberAt(r, 'bytes', `data.bytesPerKey[${i}]`)
    })
  },
  memcached(data) {
    arrayAt(data, 'rows', 'data').forEach((r, i) => {
      stringAt(r, 'algorithm', `data.rows[${i}]`)
      check(r.keys === 'hot' || r.keys === 'distinct', `data.rows[${i}].keys`, 'hot or distinct')
      numberAt(r, 'memcached', `data.rows[${i}]`)
      if (r.redis !== null) numberAt(r, 'redis', `data.rows[${i}]`)
    })
  },
  accuracy(data) {
    numberAt(data, 'limit', 'data')
    numberAt(data, 'windowMs', 'data')
    arrayAt(data, 'totals', 'data').forEach((r, i) => {
      const where = `data.totals[${i}]`
      stringAt(r, 'algorithm', where)
      for (const k of [
        'wronglyAdmittedPct',
        'wronglyRejectedPct',
        'misclassifiedPct',
        'worstWindowAdmitted',
        'worstWindowPassed',
      ]) {
        numberAt(r, k, where)
      }
      check(r.misclassifiedPct <= 100, `${where}.misclassifiedPct`, 'must be a percentage')
    })
  },
}

/** The record of `name` in `dir`, checked; an InputError when it is missing or malformed. */
function loadRecord(dir, name) {
  const file = path.join(dir, `${name}.json`)
  if (!fs.existsSync(file)) throw new InputError('missing: run its benchmark first')
  let record
  try {
    record = JSON.parse(fs.readFileSync(file, 'utf8'))
  } catch (error) {
    throw new InputError(`not JSON: ${error.message}`)
  }
  checks[name](envelope(record, name))
  return record
}

module.exports = { InputError, isNumber, loadRecord }
