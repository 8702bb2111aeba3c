"""What a server needs besides Gradio: the hosting profile, the request (validated and tokenized
in one place), the shared state by role (state.py: the pairs, the decoding slots, the advisor),
the GPU-call boundary (ZeroGPU), the /generate API's logic, machine load, a lane's run records, and
the workshop's exercises as logic. The view (specviz/view/) draws; this decides.
"""
