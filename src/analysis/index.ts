/** Post-processing of model outputs into SPEC.md results. Pure functions, no I/O. */
export * from './options';
export * from './policies';
export * from './postprocess';
