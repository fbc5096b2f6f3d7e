// The markdown table of a peers.js report (its --json rows): one row per model × threads × metric,
// each side's median [min–max] over the rounds, weightmap's ratio to each peer, the bound and each
// side's share of it, and the load average. peers.js prints it; report.js renders it from the JSON.
'use strict';

const fmt = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const pct = (x) => (x === null ? '–' : `${(100 * x).toFixed(0)}%`);

function peersTable(rows, metricNames, pairs) {
  const cell = (s) => `${fmt(s.median)} [${fmt(s.min)}–${fmt(s.max)}]${s.runs.length < pairs ? ` (${s.runs.length} of ${pairs})` : ''}`;
  const sideNames = [...new Set(rows.flatMap((r) => Object.values(r.metrics).flatMap((m) => Object.keys(m.sides))))];
  const ratioNames = [...new Set(rows.flatMap((r) => Object.values(r.metrics).flatMap((m) => Object.keys(m.ratios))))];
  const lines = [
    `| model | threads | metric | ${sideNames.join(' | ')} | ${ratioNames.join(' | ')} | bound | share of bound (${sideNames.join(' / ')}) | load avg |`,
    `|${' --- |'.repeat(4 + sideNames.length + ratioNames.length + 2)}`,
  ];
  for (const r of rows) {
    for (const metric of metricNames) {
      const m = r.metrics[metric];
      if (!m) continue;
      const bounds = [...new Set(Object.values(m.sides).map((s) => (s.bound === null ? '–' : fmt(s.bound))))].join(' / ');
      lines.push(
        `| ${r.model} | ${r.threads} | ${metric} | ${sideNames.map((n) => (m.sides[n] ? cell(m.sides[n]) : '–')).join(' | ')} | ` +
          `${ratioNames.map((n) => (m.ratios[n] ? `${m.ratios[n].median.toFixed(2)}× [${m.ratios[n].min.toFixed(2)}–${m.ratios[n].max.toFixed(2)}]` : '–')).join(' | ')} | ` +
          `${bounds} | ${sideNames.map((n) => (m.sides[n] ? pct(m.sides[n].share) : '–')).join(' / ')} | ${fmt(r.load.median)} [${fmt(r.load.min)}–${fmt(r.load.max)}] |`,
      );
    }
  }
  return lines;
}

/** The decoder and embedding titles peers.js gives its tables. */
function peersTitles(report) {
  const out = {};
  if (report.decoder) {
    const { info } = report.decoder;
    out.decoder =
      `Decoder, tok/s: prefill = pp${report.prompt} (one batch), decode = tg${report.decode} from position 0; ` +
      Object.entries(info).map(([k, v]) => `${k} ${v}`).join(', ') + '; ' +
      "bound: decode = read bandwidth (over the GGUF's mapping) ÷ bytes per token (weights + f16 KV cache), prefill = int8 peak (matrices) + f32 peak (attention)";
  }
  if (report.moe) {
    out.moe =
      `Mixture of experts, tok/s: prefill = pp${report.prompt}, decode = tg${report.decode} from position 0; ` +
      "bound: decode = read bandwidth ÷ bytes per token (attention, router, norms, classifier, the k active experts' bytes, f16 KV cache), prefill = int8 peak (active matrices) + f32 peak (attention)";
  }
  if (report.embed) {
    const { info } = report.embed;
    out.embed = `Embeddings, sentences/s (${info.describe}); transformers.js ${info.transformers} (onnxruntime-node ${info.onnxruntime}); bound: f32 or int8 peak`;
  }
  return out;
}

module.exports = { peersTable, peersTitles };
