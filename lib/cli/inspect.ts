/** `weightmap inspect PATH [--json]`: format, architecture, config, tensors, checksum status. */
import type { Command } from 'commander';
import { DECODER_NAMES, expertBytes, isDecoderConfig } from '../architectures/decoder';
import { readWeights } from '../formats';
import { closeWeights, type ModelWeights } from '../addon/weights';
import { action, existingPath } from './run-command';

export interface InspectReport {
  path: string;
  format: string;
  architecture: string;
  config: unknown;
  checksums: string;
  tensorCount: number;
  totalBytes: number;
  /** The dtype mix: tensors and bytes per dtype, most bytes first. */
  dtypes: { dtype: string; tensors: number; bytes: number }[];
  tensors: { name: string; dtype: string; shape: number[]; file: string; offset: number; bytes: number; transposed?: boolean }[];
  metadata: Record<string, unknown>;
  tokenizer?: { kind: string; tokens: number };
  /** A mixture of experts: experts per layer, those a token uses, and what one token reads. */
  experts?: ExpertsReport;
  /**
   * Tensors converted at read into a mapped file of the cache (ModelWeights.converted: gpt-oss's HF
   * experts); `inspect` itself converts none: they are `pending`, and `tensors` lists the others.
   */
  converted?: NonNullable<ModelWeights['converted']>;
}

/** What one token of a mixture-of-experts model reads of its weights. */
export interface ExpertsReport {
  experts: number;
  activeExperts: number;
  /** Bytes of every expert of every layer. */
  expertBytes: number;
  /**
   * Bytes a token reads: every tensor but the experts (and but the embedding table, of which it
   * reads one row, unless the table is also the head) plus activeExperts / experts of the experts' bytes.
   */
  bytesPerToken: number;
}

function expertsReport(weights: ModelWeights, viewed: { name: string; bytes: number }[]): ExpertsReport | undefined {
  const c = weights.config;
  if (!isDecoderConfig(c)) return undefined;
  // Tensors left unconverted count as the read would make them.
  const tensors = [...viewed, ...(weights.converted?.pending ?? []).map((t) => ({ name: t.name, bytes: t.byteLength }))];
  const bytes = new Map(tensors.map((t) => [t.name, t.bytes]));
  const moe = expertBytes(c, (name) => bytes.get(name));
  if (!moe) return undefined;
  const total = tensors.reduce((a, t) => a + t.bytes, 0);
  const embed = c.tieWordEmbeddings ? 0 : bytes.get(DECODER_NAMES.embed) ?? 0;
  const bytesPerToken = total - moe.expertBytes - embed + embed / c.vocabSize + moe.activeExpertBytes;
  return { experts: moe.experts, activeExperts: moe.activeExperts, expertBytes: moe.expertBytes, bytesPerToken: Math.round(bytesPerToken) };
}

export function inspectReport(weights: ModelWeights): InspectReport {
  const tensors = weights.tensors.map((t) => ({
    name: t.name,
    dtype: t.dtype,
    shape: t.shape,
    file: t.source.path,
    offset: t.byteOffset,
    bytes: t.byteLength + (t.scales?.byteLength ?? 0),
    ...(t.transposed ? { transposed: true } : {}),
  }));
  const mix = new Map<string, { dtype: string; tensors: number; bytes: number }>();
  for (const t of tensors) {
    const entry = mix.get(t.dtype) ?? { dtype: t.dtype, tensors: 0, bytes: 0 };
    entry.tensors++;
    entry.bytes += t.bytes;
    mix.set(t.dtype, entry);
  }
  const checksums = weights.checksums ?? 'none in this format';
  const experts = expertsReport(weights, tensors);
  const metadata = Object.fromEntries(
    Object.entries(weights.metadata).filter(([, v]) => !(Array.isArray(v) && v.length > 64) && !ArrayBuffer.isView(v)),
  );
  return {
    path: weights.path,
    format: weights.format,
    architecture: weights.architecture,
    config: weights.config,
    checksums,
    tensorCount: tensors.length,
    totalBytes: tensors.reduce((a, t) => a + t.bytes, 0),
    dtypes: [...mix.values()].sort((a, b) => b.bytes - a.bytes || a.dtype.localeCompare(b.dtype)),
    tensors,
    metadata,
    ...(weights.tokenizer ? { tokenizer: { kind: weights.tokenizer.kind, tokens: weights.tokenizer.tokens.length } } : {}),
    ...(experts ? { experts } : {}),
    ...(weights.converted ? { converted: weights.converted } : {}),
  };
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}

export function renderReport(r: InspectReport): string {
  const lines = [
    `file:         ${r.path}`,
    `format:       ${r.format}`,
    `architecture: ${r.architecture}`,
    `checksums:    ${r.checksums}`,
    `tensors:      ${r.tensorCount} (${formatBytes(r.totalBytes)})`,
    `dtypes:       ${r.dtypes.map((d) => `${d.dtype} ×${d.tensors} (${formatBytes(d.bytes)})`).join(', ')}`,
  ];
  if (r.tokenizer) lines.push(`tokenizer:    ${r.tokenizer.kind}, ${r.tokenizer.tokens} tokens`);
  if (r.experts) {
    const e = r.experts;
    lines.push(`experts:      ${e.activeExperts} of ${e.experts} per token (${formatBytes(e.expertBytes)} of experts)`, `read/token:   ${formatBytes(e.bytesPerToken)} (${e.bytesPerToken} bytes)`);
  }
  if (r.converted) {
    const c = r.converted;
    const into = c.pending ? `a read converts them once into ${c.file}${c.reused ? ' (the cache holds it)' : ''}` : `converted once into ${c.file}${c.reused ? ' (the cache held it)' : ''}`;
    lines.push(`converted:    ${c.tensors} tensors (${formatBytes(c.bytes)}) not viewable in place: ${into}`);
  }
  lines.push('config:');
  for (const [k, v] of Object.entries(r.config as Record<string, unknown>)) lines.push(`  ${k}: ${JSON.stringify(v)}`);
  const rows = r.tensors.map((t) => [t.name, t.dtype, `[${t.shape.join(', ')}]${t.transposed ? ' T' : ''}`, String(t.offset), String(t.bytes)]);
  const header = ['name', 'dtype', 'shape', 'offset', 'bytes'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const fmt = (row: string[]) => row.map((c, i) => (i >= 3 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ');
  lines.push('', fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(fmt));
  return `${lines.join('\n')}\n`;
}

export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description('show the format, architecture, configuration and tensor table of a weight file or folder')
    .argument('<path>', 'weight file or folder', existingPath)
    .option('--json', 'print a JSON report')
    .option('--parts <spec>', 'sepweight: parts to map ("f", "b 0-5", "7-12", "75-80 e")')
    .action(
      action(async (filePath: string, opts: { json?: boolean; parts?: string }) => {
        // Headers and config only: tensors a read converts (gpt-oss's HF experts) are reported, not made.
        const weights = await readWeights(filePath, { parts: opts.parts, convert: false });
        try {
          const report = inspectReport(weights);
          process.stdout.write(opts.json ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report));
        } finally {
          closeWeights(weights);
        }
      }),
    );
}
