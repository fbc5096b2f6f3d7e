/**
 * The wire schema of pipeline stages (stage.proto, version 1), loaded with @grpc/proto-loader,
 * and the TypeScript shapes of its messages as proto-loader decodes them.
 */
import * as path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { grpcModule, protoLoaderModule } from './grpc-modules';
import { packageRoot } from '../addon/native';

export const SCHEMA_VERSION = 1;

export type WireDType = 'F32' | 'F16' | 'I32';

/** A tensor message (stage.proto Tensor). */
export interface TensorMessage {
  sessionId: string;
  position: number;
  shape: number[];
  dtype: WireDType | 'DTYPE_UNSPECIFIED';
  data: Buffer;
}

/** What a stage serves (stage.proto StageInfo). Layers are inclusive. */
export interface StageInfo {
  schemaVersion: number;
  modelHash: string;
  firstLayer: number;
  lastLayer: number;
  numLayers: number;
  hiddenSize: number;
  vocabSize: number;
  maxPositions: number;
}

/** Bytes per element of each wire dtype. */
export const DTYPE_BYTES: Record<WireDType, number> = { F32: 4, F16: 2, I32: 4 };

/** The proto file: shipped at the same path in the package (package.json "files"). */
export const PROTO_PATH = path.join(packageRoot, 'lib', 'pipeline', 'stage.proto');

let loaded: grpc.ServiceDefinition | undefined;

/** The Stage service definition. */
export function stageService(): grpc.ServiceDefinition {
  if (!loaded) {
    const definition = protoLoaderModule().loadSync(PROTO_PATH, { keepCase: false, longs: Number, enums: String, defaults: true });
    const pkg = grpcModule().loadPackageDefinition(definition) as unknown as {
      weightmap: { pipeline: { v1: { Stage: grpc.ServiceClientConstructor } } };
    };
    loaded = pkg.weightmap.pipeline.v1.Stage.service;
  }
  return loaded;
}

/** A client constructor for the Stage service. */
export function stageClientConstructor(): grpc.ServiceClientConstructor {
  return grpcModule().makeGenericClientConstructor(stageService(), 'Stage');
}
