"""Running models fast, below the engine: a model with its KV cache (eager, static and compiled, CUDA
graphs with their capture and checks), the KV buffers, the lean CPU draft step and its packed linear
kernels, the tree pass, and each lane's device clock. Imports nothing of the engine, the models or
anything above: the engine's loop and analysis build on it."""
