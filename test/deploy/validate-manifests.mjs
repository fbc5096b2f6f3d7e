// Validates every document of the YAML files named on the command line against the Kubernetes API
// schemas kubernetes-models ships (ESM only, hence this child of manifests.test.ts), and prints one
// JSON line per document: { file, kind, name, errors }. A kind it has no schema for is an error.
import * as fs from 'node:fs';
import Ajv from 'ajv';
import { parseAllDocuments } from 'yaml';
import * as core from 'kubernetes-models/v1';
import * as apps from 'kubernetes-models/apps/v1';
import * as autoscaling from 'kubernetes-models/autoscaling/v2';
import * as policy from 'kubernetes-models/policy/v1';

const MODELS = { v1: core, 'apps/v1': apps, 'autoscaling/v2': autoscaling, 'policy/v1': policy };

// The Gateway API Inference Extension's InferencePool (inference.networking.k8s.io/v1), a CRD no
// package here ships: its spec as the extension's API reference states it (selector required with
// matchLabels; targetPorts 1-8 unique port numbers, required; endpointPickerRef required with a
// name and, for a Service, a port number; appProtocol http or kubernetes.io/h2c).
const port = { type: 'object', required: ['number'], additionalProperties: false, properties: { number: { type: 'integer', minimum: 1, maximum: 65535 } } };
const validateInferencePool = new Ajv({ strict: true, allErrors: true }).compile({
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { const: 'inference.networking.k8s.io/v1' },
    kind: { const: 'InferencePool' },
    metadata: { type: 'object', required: ['name'], properties: { name: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 253 } } },
    spec: {
      type: 'object',
      required: ['selector', 'targetPorts', 'endpointPickerRef'],
      additionalProperties: false,
      properties: {
        selector: { type: 'object', required: ['matchLabels'], additionalProperties: false, properties: { matchLabels: { type: 'object', minProperties: 1, maxProperties: 64, additionalProperties: { type: 'string', maxLength: 63 } } } },
        targetPorts: { type: 'array', minItems: 1, maxItems: 8, uniqueItems: true, items: port },
        appProtocol: { enum: ['http', 'kubernetes.io/h2c'] },
        endpointPickerRef: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: {
            group: { type: 'string' },
            kind: { type: 'string' },
            name: { type: 'string', minLength: 1, maxLength: 253 },
            port,
            failureMode: { enum: ['FailOpen', 'FailClose'] },
          },
        },
      },
    },
  },
});

for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(fs.readFileSync(file, 'utf8'))) {
    const out = { file, kind: undefined, name: undefined, errors: doc.errors.map((e) => e.message) };
    const object = doc.toJS();
    if (object !== null && typeof object === 'object') {
      out.kind = `${object.apiVersion}/${object.kind}`;
      out.name = object.metadata?.name;
      const Model = MODELS[object.apiVersion]?.[object.kind];
      if (out.kind === 'inference.networking.k8s.io/v1/InferencePool') {
        if (!validateInferencePool(object)) out.errors.push(...validateInferencePool.errors.map((e) => `${e.instancePath} ${e.message}`));
      } else if (Model === undefined) out.errors.push(`no schema for ${out.kind}`);
      else {
        try {
          new Model(object).validate();
        } catch (error) {
          out.errors.push(String(error.message ?? error));
        }
      }
    }
    console.log(JSON.stringify(out));
  }
}
