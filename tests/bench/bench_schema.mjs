// Ajv 8 side of the validator benchmark: the same cases as bench_schema.c
// (schema_cases.json), the same rounds, the same output format:
// one "name<TAB>ops/s" line per case, the median of ROUNDS timed rounds.
// Usage: node bench_schema.mjs <schema_cases.json> <dir holding node_modules/ajv>
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const ROUNDS = 7;
const ROUND_NS = 300000000n; // 0.3 s per round

const [casesPath, cacheDir] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(cacheDir), 'node_modules', 'x.js'));
const Ajv2020 = require('ajv/dist/2020').default;

function roundRate(validate, inst, batch) {
  let n = 0;
  const t0 = process.hrtime.bigint();
  let t = t0;
  while (t - t0 < ROUND_NS) {
    for (let i = 0; i < batch; i++) validate(inst);
    n += batch;
    t = process.hrtime.bigint();
  }
  return (n * 1e9) / Number(t - t0);
}

const { cases } = JSON.parse(readFileSync(casesPath, 'utf8'));
let failed = false;
for (const c of cases) {
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  const validate = ajv.compile(c.schema);
  if (validate(c.instance) !== c.valid) {
    console.error(`bench_schema.mjs: ${c.name}: unexpected result`);
    failed = true;
  }
  roundRate(validate, c.instance, 1000); // warm-up (and JIT)
  const rates = [];
  for (let r = 0; r < ROUNDS; r++) rates.push(roundRate(validate, c.instance, 1000));
  rates.sort((a, b) => a - b);
  console.log(`${c.name}\t${Math.round(rates[ROUNDS >> 1])}`);
}
process.exit(failed ? 1 : 0);
