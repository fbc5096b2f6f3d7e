#!/usr/bin/env node
// Lists the import cycles of lib/, between files and between folders (each folder of lib/ as one
// node, each file at lib/'s top as its own), with the import lines that close each one. Every
// import counts: `import type`, `export ... from`, require('...') and import('...') types too.
// Exits 1 when there is a cycle.  node scripts/import-cycles.js
'use strict';
require('./args').scriptArgs('import-cycles.js (no options; exits 1 when lib/ has an import cycle)');
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

const root = path.join(__dirname, '..');
const lib = path.join(root, 'lib');

function sourceFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

const files = new Set(sourceFiles(lib));

function resolve(from, spec) {
  if (!spec.startsWith('.')) return undefined;
  const base = path.join(path.dirname(from), spec);
  return [`${base}.ts`, path.join(base, 'index.ts')].find((c) => files.has(c));
}

/** The module a node names, if it is an import, a re-export, an import type or a require. */
function specifierOf(node) {
  if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
    return node.moduleSpecifier.text;
  }
  if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) return node.argument.literal.text;
  if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteral(node.arguments[0])) {
    const callee = node.expression;
    if ((ts.isIdentifier(callee) && callee.text === 'require') || callee.kind === ts.SyntaxKind.ImportKeyword) return node.arguments[0].text;
  }
  return undefined;
}

/** Every import edge: { from, to, line }. */
function importEdges() {
  const edges = [];
  for (const file of files) {
    const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const visit = (node) => {
      const spec = specifierOf(node);
      const to = spec === undefined ? undefined : resolve(file, spec);
      if (to) edges.push({ from: file, to, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1 });
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return edges;
}

/** Strongly connected components of more than one node (Tarjan). */
function cycles(nodes, next) {
  let index = 0;
  const stack = [];
  const onStack = new Set();
  const order = new Map();
  const low = new Map();
  const found = [];
  const visit = (v) => {
    order.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)) {
      if (!order.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), order.get(w)));
      }
    }
    if (low.get(v) !== order.get(v)) return;
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component);
  };
  for (const v of nodes) if (!order.has(v)) visit(v);
  return found;
}

const rel = (p) => path.relative(root, p);
const folderOf = (file) => {
  const parts = path.relative(lib, file).split(path.sep);
  return parts.length > 1 ? `lib/${parts[0]}/` : rel(file);
};

const edges = importEdges();
let total = 0;
for (const [level, nodeOf] of [['file', rel], ['folder', folderOf]]) {
  const next = new Map([...files].map((f) => [nodeOf(f), new Set()]));
  for (const e of edges) if (nodeOf(e.from) !== nodeOf(e.to)) next.get(nodeOf(e.from)).add(nodeOf(e.to));
  const found = cycles([...next.keys()], next);
  console.log(`${level} level: ${found.length} cycle(s) among ${next.size} nodes`);
  for (const component of found) {
    console.log(`  ${component.join(' <-> ')}`);
    for (const e of edges) {
      const [a, b] = [nodeOf(e.from), nodeOf(e.to)];
      if (a !== b && component.includes(a) && component.includes(b)) console.log(`    ${rel(e.from)}:${e.line} -> ${rel(e.to)}`);
    }
  }
  total += found.length;
}
process.exitCode = total > 0 ? 1 : 0;
