/**
 * deploy/k8s/: every document validates against the Kubernetes API schemas kubernetes-models ships
 * (the InferencePool against its API reference's spec; validate-manifests.mjs), and what the
 * manifests ask of weightmap exists: every flag a container passes is one its command takes (its
 * --help), the probes' paths are the server's, the autoscaler's metric is one /metrics serves, and
 * the grace period covers the preStop sleep plus the drain timeout.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';

const ROOT = path.resolve(__dirname, '..', '..');
const DIR = path.join(ROOT, 'deploy', 'k8s');
const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.yaml')).map((f) => path.join(DIR, f));
const docs = files.flatMap((file) => parseAllDocuments(fs.readFileSync(file, 'utf8')).map((d) => ({ file: path.basename(file), object: d.toJS() })));
const help = (command: string) => execFileSync(process.execPath, [path.join(ROOT, 'dist', 'cjs', 'cli', 'main.js'), command, '--help'], { encoding: 'utf8' });

function containers(object: any): any[] {
  return object.spec?.template?.spec?.containers ?? [];
}

test('every document validates against its API schema', () => {
  const out = execFileSync(process.execPath, [path.join(__dirname, 'validate-manifests.mjs'), ...files], { cwd: ROOT, encoding: 'utf8' });
  const results = out.trim().split('\n').map((line) => JSON.parse(line));
  expect(results.filter((r) => r.errors.length > 0)).toEqual([]);
  expect(results.map((r) => r.kind).sort()).toEqual([
    'apps/v1/Deployment', 'apps/v1/StatefulSet', 'apps/v1/StatefulSet', 'autoscaling/v2/HorizontalPodAutoscaler',
    'inference.networking.k8s.io/v1/InferencePool', 'policy/v1/PodDisruptionBudget', 'v1/Service', 'v1/Service', 'v1/Service',
  ]);
});

test('the flags the containers pass are the commands\' own', () => {
  const checked: string[] = [];
  for (const { object } of docs) {
    for (const c of containers(object)) {
      const [command, ...args] = c.args as string[];
      const usage = help(command);
      for (const arg of args.filter((a) => a.startsWith('--'))) {
        const flag = arg.split('=')[0];
        expect({ command, flag, known: usage.includes(`${flag} `) || usage.includes(`${flag}\n`) }).toEqual({ command, flag, known: true });
        checked.push(flag);
      }
    }
  }
  expect(checked).toEqual(expect.arrayContaining(['--host', '--drain-timeout', '--layers', '--listen', '--tls-cert']));
});

test('probes, the autoscaler\'s metric and the grace period fit the server', () => {
  const deployment = docs.find((d) => d.object.kind === 'Deployment')!.object;
  const [c] = containers(deployment);
  expect([c.livenessProbe.httpGet.path, c.readinessProbe.httpGet.path, c.startupProbe.httpGet.path]).toEqual(['/health', '/ready', '/health']);
  const handler = fs.readFileSync(path.join(ROOT, 'lib', 'server', 'handler.ts'), 'utf8');
  for (const route of ['/health', '/ready']) expect(handler).toContain(`'${route}'`);

  const hpa = docs.find((d) => d.object.kind === 'HorizontalPodAutoscaler')!.object;
  const metric = hpa.spec.metrics[0].pods.metric.name as string;
  expect(fs.readFileSync(path.join(ROOT, 'lib', 'server', 'metrics.ts'), 'utf8')).toContain(`'${metric}'`);

  const drain = Number((c.args as string[]).find((a) => a.startsWith('--drain-timeout='))!.split('=')[1]);
  const sleep = Number(c.lifecycle.preStop.exec.command[1]);
  expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(drain + sleep);
});
