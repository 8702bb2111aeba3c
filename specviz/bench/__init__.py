"""`python -m specviz bench`: specviz against plain decoding, transformers' generate() and
assisted generation, and the theory; measured side by side in one process."""
