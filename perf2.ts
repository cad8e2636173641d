import { calibration, selectivePrediction, clusterBootstrap } from "./src/eval/stats/index.js";
import { shareInterval, meanInterval } from "./src/eval/record-stats.js";
const n = 2000;
const xs = Array.from({ length: n }, (_, i) => ({ confidence: Math.random(), correct: Math.random() < 0.6, item: `q${i % 1000}` }));
const recs = xs.map((x, i) => ({ id: x.item, correct: x.correct, v: i % 3 }));
let t = Date.now(); shareInterval(recs, (r) => r.correct); console.log("share", Date.now() - t);
t = Date.now(); meanInterval(recs, (r) => r.v); console.log("mean", Date.now() - t);
t = Date.now(); calibration(xs); console.log("cal", Date.now() - t);
t = Date.now(); selectivePrediction(xs); console.log("sel", Date.now() - t);
