/**
 * Formats, engines and loaders ask the registry (lib/architectures) what to do with a config and
 * never compare architecture names (ARCHITECTURE.md). This scans every file of lib/ outside
 * lib/architectures/ with the TypeScript parser for the compares that would break that rule:
 *
 *   - `===` / `!==` (or `==` / `!=`) with an architecture on one side: `config.architecture`,
 *     `arch`, `architecture`, `model_type` (whatever the other side),
 *   - `===` / `!==` or a `case` with the literal name of an architecture, a decoder variant's GGUF
 *     `general.architecture` or HF `model_type`, unless the other side is one of the names of other
 *     things spelt alike: a GGUF vocabulary's `tokenizer.ggml.model` ('llama' is SentencePiece) and
 *     `.pre`, a model class (`.modelClass`),
 *   - `===` / `!==` or a `case` of a registry answer naming a family or an engine (`.family`,
 *     `.engine`) or a chat template (`.defaultChatTemplate`) with a literal: what to do is a
 *     capability of the entry (sentenceTransformers, ggufEncoder, quantizesOnLoad, modelClass) or
 *     a table keyed by the answer.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import { ARCHITECTURES } from '../../lib/architectures';
import { DECODER_VARIANTS } from '../../lib/architectures/decoder';

const lib = path.join(__dirname, '..', '..', 'lib');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return p === path.join(lib, 'architectures') ? [] : sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

const names = new Set<string>([...ARCHITECTURES.keys()]);
for (const v of Object.values(DECODER_VARIANTS)) {
  names.add(v.ggufArchitecture);
  for (const t of v.hfModelTypes) names.add(t);
}

for (const e of ARCHITECTURES.values()) {
  names.add(e.family);
  names.add(e.engine);
}
const ARCH_OPERAND = /^(arch|architecture|modelType|model_type|family|engine|defaultChatTemplate)$/;
const OTHER_NAMES = /^(modelClass|model|pre)$/;
const EQUALITY = new Set([ts.SyntaxKind.EqualsEqualsEqualsToken, ts.SyntaxKind.ExclamationEqualsEqualsToken, ts.SyntaxKind.EqualsEqualsToken, ts.SyntaxKind.ExclamationEqualsToken]);

/** The last name of an operand: `c.architecture` -> architecture, `arch` -> arch, `x.y()` -> undefined. */
function tailName(e: ts.Expression): string | undefined {
  for (;;) {
    if (ts.isParenthesizedExpression(e) || ts.isNonNullExpression(e) || ts.isAsExpression(e)) e = e.expression;
    else if (ts.isBinaryExpression(e) && e.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken) e = e.left;
    else break;
  }
  if (ts.isIdentifier(e)) return e.text;
  if (ts.isPropertyAccessExpression(e)) return e.name.text;
  if (ts.isElementAccessExpression(e) && ts.isStringLiteral(e.argumentExpression)) return e.argumentExpression.text;
  return undefined;
}

function isNameLiteral(e: ts.Expression): boolean {
  return (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) && names.has(e.text);
}

/** Every compare of an architecture name in `file`, as "path:line: text". */
function compares(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  const report = (node: ts.Node) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
    found.push(`${path.relative(lib, file)}:${line}: ${node.getText().slice(0, 120)}`);
  };
  const visit = (node: ts.Node) => {
    if (ts.isBinaryExpression(node) && EQUALITY.has(node.operatorToken.kind)) {
      const sides = [node.left, node.right];
      // A registry answer (family, engine) compared with anything but a literal is no name compare (serve.ts: an address family).
      const archSide = sides.some((s) => ARCH_OPERAND.test(tailName(s) ?? '')) && !sides.some((s) => ts.isStringLiteral(s) && !names.has(s.text));
      const literal = sides.some(isNameLiteral) && !sides.some((s) => OTHER_NAMES.test(tailName(s) ?? ''));
      if (archSide || literal) report(node);
    }
    if (ts.isSwitchStatement(node) && !OTHER_NAMES.test(tailName(node.expression) ?? '')) {
      for (const clause of node.caseBlock.clauses) if (ts.isCaseClause(clause) && isNameLiteral(clause.expression)) report(clause.expression);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test('the scan finds a compare of an architecture name', () => {
  // The scan itself, on a scratch file outside lib/: each form it must find.
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'wm-scan-'));
  const file = path.join(dir, 'probe.ts');
  fs.writeFileSync(file, [
    "if (config.architecture === 'llama') x();",
    "if (arch !== other) x();",
    "const g = name === 'gemma3_text';",
    "switch (kind) { case 'bert': break; }",
    "if (entry.family === 'bert') x();",
    "if (entry?.engine !== 'moondream') x();",
    "switch (data.model) { case 'llama': break; }",
    "switch (entry?.family) { case 'decoder': break; }",
    "if (variant?.defaultChatTemplate === 'qwen3') x();",
    "if (address.family === 'IPv6') x();",
    "if (entry.modelClass === 'Reranker') x();",
  ].join('\n'));
  try {
    expect(compares(file).map((s) => Number(/:(\d+):/.exec(s)![1]))).toEqual([1, 2, 3, 4, 5, 6, 8, 9]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('no file of lib/ outside lib/architectures/ compares an architecture name', () => {
  const files = sourceFiles(lib);
  expect(files.length).toBeGreaterThan(100);
  expect(files.flatMap(compares)).toEqual([]);
});
