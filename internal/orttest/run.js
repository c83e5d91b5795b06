// Runs ONNX models in ONNX Runtime (onnxruntime-node) for tapegrad's
// tests: one JSON request per line on stdin, one JSON answer per line on
// stdout. Tensors travel in files of little-endian values.
//
//   request: {"id": 1, "model": "m.onnx", "opt": "all"|"disabled",
//             "optimized": "" | "out.onnx",
//             "inputs": {"input": {"dims": [2, 28, 28, 1], "file": "x.bin"}},
//             "outDir": "dir"}
//   answer:  {"id": 1, "outputs": {"logits": {"dims": [2, 10], "type": "float32", "file": "dir/logits.bin"}}}
//            or {"id": 1, "error": "..."}
//
// The module path of onnxruntime-node is the first argument.
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const ort = require(process.argv[2]);

async function handle(req) {
  const opts = {
    graphOptimizationLevel: req.opt || 'all',
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  };
  if (req.optimized) opts.optimizedModelFilePath = req.optimized;
  const session = await ort.InferenceSession.create(req.model, opts);
  const feeds = {};
  for (const [name, t] of Object.entries(req.inputs)) {
    const buf = fs.readFileSync(t.file);
    const data = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
    feeds[name] = new ort.Tensor('float32', Float32Array.from(data), t.dims);
  }
  const results = await session.run(feeds);
  const outputs = {};
  for (const [name, t] of Object.entries(results)) {
    const file = path.join(req.outDir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.bin');
    const d = t.data;
    fs.writeFileSync(file, Buffer.from(d.buffer, d.byteOffset, d.byteLength));
    outputs[name] = { dims: t.dims, type: t.type, file };
  }
  if (session.release) await session.release();
  return { id: req.id, outputs };
}

const rl = readline.createInterface({ input: process.stdin });
let chain = Promise.resolve();
rl.on('line', (line) => {
  chain = chain.then(async () => {
    let answer;
    try {
      const req = JSON.parse(line);
      try {
        answer = await handle(req);
      } catch (e) {
        answer = { id: req.id, error: String(e && e.message ? e.message : e) };
      }
    } catch (e) {
      answer = { id: -1, error: 'bad request: ' + String(e) };
    }
    process.stdout.write(JSON.stringify(answer) + '\n');
  });
});
rl.on('close', () => { chain.then(() => process.exit(0)); });
