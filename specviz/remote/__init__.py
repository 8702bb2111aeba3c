"""A remote serving engine (vLLM) as a source of speculative rounds: what its responses say, nothing invented.

client.py speaks HTTP (the OpenAI-style completion stream and the Prometheus /metrics page); rounds.py turns
one completion's tokens and its per-request speculative metrics into rounds and token fates (sans-I/O);
exactness.py checks the server's output against the target's own law; servers.py holds the addresses the
host listed (never one a visitor typed). Imports the engine and the models, never the app or the view.
"""
