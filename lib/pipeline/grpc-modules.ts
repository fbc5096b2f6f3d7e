/** The gRPC packages of the pipeline, loaded when a stage or a coordinator first needs them (lib/base/lazy.ts). */
/* eslint-disable @typescript-eslint/no-require-imports */
import { lazy } from '../base/lazy';

export const grpcModule = lazy(() => require('@grpc/grpc-js') as typeof import('@grpc/grpc-js'));
export const protoLoaderModule = lazy(() => require('@grpc/proto-loader') as typeof import('@grpc/proto-loader'));
export const healthCheckModule = lazy(() => require('grpc-health-check') as typeof import('grpc-health-check'));
