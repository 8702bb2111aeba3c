"""The definitions of every figure: what a lane's events fold into (measures.py: a, tau, c, v,
speedup) and the closed-form expectations of speculative decoding (theory.py). Imports nothing:
every other room, the page, the CLI and the benchmark call these same functions."""
