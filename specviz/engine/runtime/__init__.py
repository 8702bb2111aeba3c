"""Running models fast: a model with its KV cache (eager, static and compiled, CUDA graphs), the
KV buffers, the lean CPU draft step and its packed linear kernels, and each lane's device clock.
Imports nothing else of the engine: the loop and the analysis build on it."""
