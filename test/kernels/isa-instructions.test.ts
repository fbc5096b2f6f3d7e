/**
 * The instructions each x86 table may execute, read from the addon's disassembly (objdump): every
 * function reachable from a table's builder (the slots it stores, and their calls and jumps,
 * through the PLT too) is scanned. kernels_avx512.cc is compiled with VNNI enabled for the
 * "avx512vnni" table, but the "avx512" table also runs on AVX-512 CPUs without VNNI (Skylake-X),
 * so no VNNI instruction may be reachable from it.
 */
import { spawnSync } from 'node:child_process';
import { addonPath } from './reference';

const VNNI = /(?:^|\s)vpdp(?:bus|wss)ds?\s/; // vpdpbusd(s), vpdpwssd(s), AVX-VNNI's "{vex}" forms too

interface Fn {
  name: string;
  start: number;
  last: number; // address of its last instruction
  insns: string[];
  refs: number[]; // addresses it calls, jumps to or takes (rip-relative)
}

/** Every function (and PLT entry) objdump disassembles, sorted by address. */
function disassemble(file: string): Fn[] {
  const r = spawnSync('objdump', ['-d', '-C', '--no-show-raw-insn', file], { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.error || r.status !== 0) throw new Error(`objdump -d ${file} failed (binutils is needed): ${r.error?.message ?? r.stderr}`);
  const fns: Fn[] = [];
  let fn: Fn | undefined;
  for (const line of r.stdout.split('\n')) {
    const head = /^([0-9a-f]+) <(.+)>:$/.exec(line);
    if (head) {
      fn = { name: head[2], start: parseInt(head[1], 16), last: parseInt(head[1], 16), insns: [], refs: [] };
      fns.push(fn);
      continue;
    }
    const insn = /^\s+([0-9a-f]+):\t(.*)$/.exec(line);
    if (!fn || !insn) continue;
    fn.last = parseInt(insn[1], 16);
    const [code, comment] = insn[2].split('#');
    fn.insns.push(code);
    const branch = /^(?:call|j[a-z]+)q?\s+([0-9a-f]+) </.exec(code);
    const ripTarget = comment ? /^\s*([0-9a-f]+) </.exec(comment) : null;
    for (const m of [branch, ripTarget]) if (m) fn.refs.push(parseInt(m[1], 16));
  }
  return fns.sort((a, b) => a.start - b.start);
}

/**
 * The functions reachable from the one named `root`: through every address they reference that
 * lies inside a function (data does not), and from a PLT entry to the functions of that name.
 */
function reachable(fns: Fn[], root: string): Fn[] {
  const plain = (name: string) => name.replace(/ \[clone [^\]]*\]/g, '');
  const byName = new Map<string, Fn[]>();
  for (const f of fns) byName.set(plain(f.name), [...(byName.get(plain(f.name)) ?? []), f]);
  const containing = (addr: number): Fn | undefined => {
    let lo = 0;
    let hi = fns.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (fns[mid].start > addr) hi = mid - 1;
      else if (fns[mid].last < addr) lo = mid + 1;
      else return fns[mid];
    }
    return undefined;
  };
  const seen = new Set<Fn>(byName.get(root) ?? []);
  if (!seen.size) throw new Error(`${root} is not in the disassembly (a stripped build?)`);
  const queue = [...seen];
  while (queue.length) {
    for (const addr of (queue.pop() as Fn).refs) {
      const target = containing(addr);
      if (!target) continue;
      const targets = target.name.endsWith('@plt') ? (byName.get(target.name.slice(0, -4)) ?? []) : [target];
      for (const t of targets)
        if (!seen.has(t)) {
          seen.add(t);
          queue.push(t);
        }
    }
  }
  return [...seen];
}

const x64Elf = process.platform === 'linux' && process.arch === 'x64';

(x64Elf ? describe : describe.skip)('instructions reachable from the x86 tables', () => {
  const fns = x64Elf ? disassemble(addonPath()) : [];
  const vnniIn = (root: string) =>
    reachable(fns, root)
      .filter((f) => f.insns.some((insn) => VNNI.test(insn)))
      .map((f) => f.name);

  test('the scan sees the VNNI table use vpdpbusd (through its Q8_0, int8 and ggml slots)', () => {
    const names = vnniIn('weightmap::kernels::Avx512VnniTable()');
    for (const user of [/Q8.*<.*QVnniZ/, /I8.*<.*QVnniZ/, /GgmlKernel<.*GgmlVnni/]) expect(names.some((n) => user.test(n))).toBe(true);
  });

  test('the "avx512" table reaches every one of its slots and no VNNI instruction', () => {
    const names = reachable(fns, 'weightmap::kernels::Avx512Table()').map((f) => f.name);
    for (const slot of ['MatvecQ8T<', 'MatmulQ8T<', 'MatvecQ8RowsT<', 'GemmI8<', 'SgemmPacked<', 'AttentionHead(', 'GgmlKernel<'])
      expect(names.some((n) => n.includes(slot))).toBe(true);
    expect(vnniIn('weightmap::kernels::Avx512Table()')).toEqual([]);
  });

  test('the "avx2" table reaches no VNNI instruction either', () => {
    expect(vnniIn('weightmap::kernels::Avx2Table()')).toEqual([]);
  });
});
