/** Model registry, worker-thread inference pool and windowed runners. */
export * from './engine';
export * from './env';
export * from './pool';
export * from './registry';
export * from './runner';
export { placeholderManifest, placeholderOnnx, writePlaceholderModels } from './placeholder';
export type { PlaceholderSpec } from './placeholder';
